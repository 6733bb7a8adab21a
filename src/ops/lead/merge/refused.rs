//! A lane the queue did not land: its owner's resolution brief, the
//! message that tells them, and the refusal as the queue reports it.

use super::*;

impl Queue {
    /// Record `item` as refused for `refusal` (the code, the paths and the
    /// detail of the failed merge, gate or push) and tell its owner.
    pub(super) fn refuse(
        &mut self,
        ctx: &Ctx,
        item: &Item,
        base_tip: &str,
        pairs: &[Pair],
        refusal: (&'static str, Vec<String>, String),
    ) {
        let (code, paths, detail) = refusal;
        let involved = queue::pairs_of(pairs, &item.lane.feature);
        let git = &ctx.store.git;
        let brief = brief(
            item,
            base_tip,
            git,
            code,
            &paths,
            &detail,
            &involved,
            &self.landed,
        );
        let message = tell(ctx, &self.plan, item, &brief, &mut self.warnings);
        self.refused.push(Refused {
            lane: item.lane.feature.clone(),
            owner: item.lane.record.owner.clone(),
            code,
            head: item.head.clone(),
            base: item.base.clone(),
            base_commit: base_tip.to_string(),
            paths,
            pairs: involved,
            brief,
            message,
        });
    }
}
