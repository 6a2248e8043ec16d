//! The analyses of the last few command strings, so that one call's command is analysed once
//! although dispatch (is it concurrency-safe?) and the permission decision both ask, and a
//! command an agent runs again and again (`git status`, `cargo test`) is not walked each time.
//!
//! An analysis depends on the command's text alone (nothing here looks at the file system or
//! the environment), so the text is the whole key: a hook that rewrites a command between
//! validation and the decision makes a new key, never a stale answer.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

use super::Analysis;

/// Analyses kept. A handful covers the calls of a batch in flight at once.
const KEPT: usize = 16;

/// Commands longer than this are analysed every time: what stays cached is bounded
/// (`KEPT` × this many bytes of text, and analyses in proportion to it).
const LONGEST_KEPT: usize = 16 * 1024;

/// Kept analyses, the most recent first.
pub(super) struct Recent {
    entries: Mutex<VecDeque<(Arc<str>, Arc<Analysis>)>>,
}

/// The table every analysis of the process goes through.
pub(super) fn table() -> &'static Recent {
    static TABLE: OnceLock<Recent> = OnceLock::new();
    TABLE.get_or_init(Recent::new)
}

impl Recent {
    fn new() -> Self {
        Self {
            entries: Mutex::new(VecDeque::with_capacity(KEPT)),
        }
    }

    /// The analysis of `command`: a kept one, or `walk(command)` (which is then kept).
    pub(super) fn analysis(
        &self,
        command: &str,
        walk: impl FnOnce(&str) -> Analysis,
    ) -> Arc<Analysis> {
        if command.len() > LONGEST_KEPT {
            return Arc::new(walk(command));
        }
        if let Some(found) = self.lookup(command) {
            return found;
        }
        // Walked outside the lock: an analysis can take a while, and other threads may decide.
        let fresh = Arc::new(walk(command));
        let mut kept = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if !kept.iter().any(|(text, _)| &**text == command) {
            if kept.len() == KEPT {
                kept.pop_back();
            }
            kept.push_front((Arc::from(command), Arc::clone(&fresh)));
        }
        fresh
    }

    /// A kept analysis of `command`, moved to the front.
    fn lookup(&self, command: &str) -> Option<Arc<Analysis>> {
        let mut kept = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let at = kept.iter().position(|(text, _)| &**text == command)?;
        let found = Arc::clone(&kept[at].1);
        if at > 0
            && let Some(entry) = kept.remove(at)
        {
            kept.push_front(entry);
        }
        Some(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn counting<'a>(walks: &'a Cell<usize>) -> impl Fn(&str) -> Analysis + 'a {
        move |command: &str| {
            walks.set(walks.get() + 1);
            super::super::parse::analyse(command)
        }
    }

    #[test]
    fn a_command_is_walked_once_while_it_is_kept() {
        let walks = Cell::new(0);
        let walk = counting(&walks);
        let command = "echo recent-once-1 && ls -la recent-once-1";
        let recent = Recent::new();
        let first = recent.analysis(command, &walk);
        let second = recent.analysis(command, &walk);
        assert_eq!(walks.get(), 1);
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(first.commands.len(), 2);
    }

    #[test]
    fn the_text_is_the_key() {
        let walks = Cell::new(0);
        let walk = counting(&walks);
        let recent = Recent::new();
        let read = recent.analysis("cat recent-key-1.txt", &walk);
        let write = recent.analysis("rm recent-key-1.txt", &walk);
        assert_eq!(walks.get(), 2);
        assert_eq!(read.commands[0].program, "cat");
        assert_eq!(write.commands[0].program, "rm");
    }

    #[test]
    fn long_commands_are_not_kept_and_the_table_stays_bounded() {
        let walks = Cell::new(0);
        let walk = counting(&walks);
        let long = format!("echo {}", "x".repeat(LONGEST_KEPT));
        let recent = Recent::new();
        recent.analysis(&long, &walk);
        recent.analysis(&long, &walk);
        assert_eq!(walks.get(), 2);
        for i in 0..KEPT * 3 {
            recent.analysis(&format!("echo recent-bound-{i}"), &walk);
        }
        // The oldest went first: the most recent is still kept.
        recent.analysis(&format!("echo recent-bound-{}", KEPT * 3 - 1), &walk);
        assert_eq!(walks.get(), 2 + KEPT * 3);
        let kept = recent.entries.lock().unwrap();
        assert!(kept.len() <= KEPT);
        assert!(kept.iter().all(|(text, _)| text.len() <= LONGEST_KEPT));
    }
}
