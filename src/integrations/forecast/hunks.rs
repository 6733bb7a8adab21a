//! The first conflicting hunk of a file git left with conflict markers:
//! each side's lines, short (a few lines, each cut to a readable width).

/// Lines kept per side.
const MAX_LINES: usize = 6;
/// Characters kept per line.
const MAX_WIDTH: usize = 120;

/// (ours, theirs) of the first `<<<<<<<` … `=======` … `>>>>>>>` hunk; a
/// diff3-style base section (`|||||||`) is left out. Empty when there is none.
pub fn first_hunk(text: &str) -> (Vec<String>, Vec<String>) {
    #[derive(PartialEq)]
    enum At {
        Outside,
        Ours,
        Base,
        Theirs,
    }
    let mut at = At::Outside;
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for line in text.lines() {
        match at {
            At::Outside if line.starts_with("<<<<<<<") => at = At::Ours,
            At::Outside => {}
            _ if line.starts_with(">>>>>>>") => break,
            At::Ours if line.starts_with("|||||||") => at = At::Base,
            At::Ours | At::Base if line.starts_with("=======") => at = At::Theirs,
            At::Ours => ours.push(line),
            At::Base => {}
            At::Theirs => theirs.push(line),
        }
    }
    (short(&ours), short(&theirs))
}

fn short(lines: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = lines.iter().take(MAX_LINES).map(|l| cut(l)).collect();
    if lines.len() > MAX_LINES {
        out.push(format!("… {} more lines", lines.len() - MAX_LINES));
    }
    out
}

fn cut(line: &str) -> String {
    if line.chars().count() <= MAX_WIDTH {
        return line.to_string();
    }
    let mut s: String = line.chars().take(MAX_WIDTH).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_hunk_gives_both_sides() {
        let text =
            "a\n<<<<<<< A\nB1\n=======\nB2\n>>>>>>> B\nc\n<<<<<<< A\nx\n=======\ny\n>>>>>>> B\n";
        assert_eq!(
            first_hunk(text),
            (vec!["B1".to_string()], vec!["B2".to_string()])
        );
    }

    #[test]
    fn diff3_base_lines_are_left_out_and_long_hunks_cut() {
        let text = "<<<<<<< A\no\n||||||| base\nb\n=======\nt\n>>>>>>> B\n";
        assert_eq!(first_hunk(text), (vec!["o".into()], vec!["t".into()]));
        let long: String = (0..10).map(|i| format!("l{i}\n")).collect();
        let text = format!("<<<<<<< A\n{long}=======\n>>>>>>> B\n");
        let (ours, theirs) = first_hunk(&text);
        assert_eq!(ours.len(), MAX_LINES + 1);
        assert_eq!(ours.last().unwrap(), "… 4 more lines");
        assert!(theirs.is_empty());
        let wide = "x".repeat(500);
        let text = format!("<<<<<<< A\n{wide}\n=======\n>>>>>>> B\n");
        assert!(first_hunk(&text).0[0].chars().count() <= MAX_WIDTH + 1);
    }

    #[test]
    fn no_markers_no_hunk() {
        assert_eq!(first_hunk("plain\n"), (vec![], vec![]));
    }
}
