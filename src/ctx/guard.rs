//! The session of a guard (a hook, `git swarm check`).

use std::path::Path;

use super::Ctx;
use crate::config::Settings;
use crate::error::Result;
use crate::store::Store;

impl Ctx {
    /// The session a guard runs in: the repository git describes to the
    /// hook (`GIT_DIR` first, like git; every failure there is exit 4, so
    /// a guard fails closed), settings that never fail to load (a guard
    /// reads only what it needs, and says so when it cannot), and no
    /// network.
    pub fn open_for_guards(cwd: &Path, as_flag: Option<String>) -> Result<Ctx> {
        let store = Store::open(cwd)?;
        let settings = Settings::load_for_guards(&store);
        Ok(Ctx {
            store,
            settings,
            as_flag,
            offline: true,
        }
        .with_trust_base())
    }
}
