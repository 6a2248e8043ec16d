//! Deciding a call made inside an agent scope: every level of the scope's chain decides, and
//! the narrowest verdict wins (docs/SEMANTICS.md §10).
//!
//! A level is a compiled [`Policy`] and the mode it is decided in: the session's rules at the
//! top, then each agent type down the chain that brings rules or a mode of its own. A call is
//! allowed only when every level allows it, asks when some level asks and none denies, and is
//! denied when any level denies. So deny and ask rules add up along the chain, a scope's allow
//! counts only where every level above it also allows, and a mode only ever narrows what the
//! levels above allow. The chain is built once, when the scope starts; a call walks its levels
//! (usually one or two: levels that add nothing are left out) and nothing else.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::{Map, Value};

use super::decision::{Behavior, Decision, HookVerdict, Mode};
use super::policy::{DecisionRequest, Located, Policy};
use crate::tool::{Access, Subject};

/// One level of a scope's chain: whose rules, in which mode.
#[derive(Debug, Clone)]
pub(crate) struct Level {
    /// The rules of this level (the session's, or an agent type's).
    pub policy: Arc<Policy>,
    /// The mode this level decides in (already narrowed against the level above).
    pub mode: Mode,
    /// Who this level is, for decisions and `toolrt explain` (`the session's rules`,
    /// `agent type "tester"`).
    pub label: Arc<str>,
}

/// The levels a scoped call is decided by, outermost first; never empty.
#[derive(Debug)]
pub(crate) struct Chain {
    levels: Box<[Level]>,
    /// Decisions of tools matched by their name only, by name: such a decision depends on
    /// nothing but the tool and the rules, so each is made once per chain (bounded).
    /// Keyed by the name alone so a lookup borrows the call's `&str` (no allocation per call);
    /// the slot is whether the tool needs no permission.
    by_name: RwLock<HashMap<Box<str>, ByDefault>>,
}

/// A name's decisions: `[needs permission, allowed by default]`.
type ByDefault = [Option<Decision>; 2];

/// The most tool names a chain keeps decisions for (two each at most: past it, decisions are
/// made per call).
const MAX_BY_NAME: usize = 8;

impl Chain {
    /// A chain of these levels, outermost first. A level deciding exactly as the one above it
    /// (the same rules in the same mode) is left out: it could never change a verdict.
    pub(crate) fn new(top: Level, below: impl IntoIterator<Item = Level>) -> Self {
        let mut levels = vec![top];
        for level in below {
            let last = &levels[levels.len() - 1];
            if Arc::ptr_eq(&last.policy, &level.policy) && last.mode == level.mode {
                continue;
            }
            levels.push(level);
        }
        Self {
            levels: levels.into_boxed_slice(),
            by_name: RwLock::new(HashMap::new()),
        }
    }

    /// This chain with one more level below it (a child scope's).
    pub(crate) fn below(&self, level: Level) -> Self {
        Self::new(
            self.levels[0].clone(),
            self.levels[1..].iter().cloned().chain([level]),
        )
    }

    #[cfg(test)]
    /// The levels that decide, outermost first.
    pub(crate) fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// The innermost level: its rules and mode are the scope's own (as narrowed).
    pub(crate) fn innermost(&self) -> &Level {
        &self.levels[self.levels.len() - 1]
    }

    /// Decides one call at every level: the first deny (outermost first) wins, else the first
    /// ask, else the innermost allow. The decision names the level that decided.
    pub(crate) fn decide(
        &self,
        tool: &str,
        access: Access<'_>,
        input: &Map<String, Value>,
        hook: Option<HookVerdict>,
    ) -> Decision {
        // A tool with nothing in its input for rules to look into (and no hook verdict) is
        // decided the same way every time: once per chain.
        let by_name = hook.is_none() && access.subject == Subject::Name;
        if by_name {
            let slot = usize::from(access.allowed_by_default);
            if let Some(Some(d)) = self.read_by_name().get(tool).map(|pair| &pair[slot]) {
                return d.clone();
            }
            let d = self.decide_levels(tool, access, input, None);
            let mut cache = self.by_name.write().unwrap_or_else(|p| p.into_inner());
            if let Some(pair) = cache.get_mut(tool) {
                pair[slot] = Some(d.clone());
            } else if cache.len() < MAX_BY_NAME {
                let mut pair = ByDefault::default();
                pair[slot] = Some(d.clone());
                cache.insert(Box::from(tool), pair);
            }
            return d;
        }
        self.decide_levels(tool, access, input, hook)
    }

    /// [`Chain::decide`] for a call on a worker node, whose path is resolved there (`at`).
    pub(crate) fn decide_at(
        &self,
        tool: &str,
        access: Access<'_>,
        input: &Map<String, Value>,
        hook: Option<HookVerdict>,
        at: Option<&Located>,
    ) -> Decision {
        let Some(at) = at else {
            return self.decide(tool, access, input, hook);
        };
        self.combine(|level| {
            let req = DecisionRequest {
                tool,
                access,
                input,
                mode: level.mode,
                hook: hook.clone(),
            };
            level.policy.decide_at(&req, Some(at))
        })
    }

    /// [`Chain::recheck`] for a call on a worker node (`at`).
    pub(crate) fn recheck_at(
        &self,
        tool: &str,
        access: Access<'_>,
        input: &Map<String, Value>,
        at: Option<&Located>,
    ) -> Decision {
        self.combine(|level| {
            let policy = &level.policy;
            policy.recheck_updated_at(tool, access, input, level.mode, at)
        })
    }

    fn read_by_name(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Box<str>, ByDefault>> {
        self.by_name.read().unwrap_or_else(|p| p.into_inner())
    }

    fn decide_levels(
        &self,
        tool: &str,
        access: Access<'_>,
        input: &Map<String, Value>,
        hook: Option<HookVerdict>,
    ) -> Decision {
        self.combine(|level| {
            level.policy.decide(&DecisionRequest {
                tool,
                access,
                input,
                mode: level.mode,
                hook: hook.clone(),
            })
        })
    }

    /// [`Policy::recheck_updated`] at every level: an input rewritten after an ask must pass
    /// the deny and ask rules of every level.
    pub(crate) fn recheck(
        &self,
        tool: &str,
        access: Access<'_>,
        input: &Map<String, Value>,
    ) -> Decision {
        self.combine(|level| {
            level
                .policy
                .recheck_updated(tool, access, input, level.mode)
        })
    }

    fn combine(&self, decide: impl Fn(&Level) -> Decision) -> Decision {
        let mut asked: Option<Decision> = None;
        let mut allowed: Option<Decision> = None;
        // A path each level judged: a level that resolved it another way (a symlink swapped
        // between two levels' looks) did not judge that way's file.
        let mut paths: Option<Vec<std::path::PathBuf>> = None;
        for level in self.levels.iter() {
            let mut d = decide(level);
            d.level = Some(level.label.clone());
            if let Some(seen) = &d.paths {
                paths = Some(match paths {
                    None => seen.to_vec(),
                    Some(mut both) => {
                        both.retain(|p| seen.contains(p));
                        both
                    }
                });
            }
            match d.behavior {
                Behavior::Deny => return d,
                Behavior::Ask => {
                    asked.get_or_insert(d);
                }
                Behavior::Allow => allowed = Some(d),
            }
        }
        // `levels` is never empty, so one of the two is set.
        let mut d = asked.or(allowed).unwrap_or_else(|| {
            Decision::new(
                Behavior::Deny,
                super::DecidedBy::NoRule,
                self.innermost().mode,
            )
        });
        d.paths = paths.map(std::sync::Arc::from);
        d
    }
}

/// A scope's tools ask its chain: a path is hidden when any level's Read deny rule covers it,
/// writing is refused when any level's deny rule forbids it, and a fetch is allowed only when
/// every level allows it.
impl crate::session::Guard for Chain {
    fn read_denied(&self, path: &std::path::Path) -> bool {
        self.levels.iter().any(|l| l.policy.read_denied(path))
    }

    fn write_denied(&self, path: &std::path::Path) -> bool {
        self.levels.iter().any(|l| l.policy.write_denied(path))
    }

    fn fetch_allowed(&self, url: &str) -> bool {
        self.levels.iter().all(|l| l.policy.fetch_allowed(url))
    }

    fn read_deny_patterns(&self) -> Vec<String> {
        (self.levels.iter())
            .flat_map(|l| l.policy.read_deny_patterns())
            .collect()
    }
}

/// The mode a scope decides in: its own, unless that would be wider than its parent's. A mode
/// that allows more without asking — `bypassPermissions`, then `acceptEdits` — is never gained:
/// a child asking for one its parent lacks keeps its parent's mode. Every other choice (the
/// same mode, `default`, `plan`, `dontAsk`) stands, and since every level of the chain must
/// allow a call, a child's mode can only narrow what its parent allows.
pub(crate) fn narrow_mode(parent: Mode, own: Option<Mode>) -> Mode {
    let Some(own) = own else {
        return parent;
    };
    let gains = match own {
        Mode::BypassPermissions => parent != Mode::BypassPermissions,
        Mode::AcceptEdits => !matches!(parent, Mode::BypassPermissions | Mode::AcceptEdits),
        Mode::Default | Mode::Plan | Mode::DontAsk => false,
    };
    if gains { parent } else { own }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(rules: Value) -> Arc<Policy> {
        let dir = std::env::temp_dir();
        let mut b = super::super::PolicyBuilder::new(dir.clone(), dir.clone());
        b.add_settings_file(&dir.join("s.json"), &rules).unwrap();
        Arc::new(b.build().unwrap())
    }

    fn level(p: &Arc<Policy>, mode: Mode, label: &str) -> Level {
        Level {
            policy: p.clone(),
            mode,
            label: Arc::from(label),
        }
    }

    fn bash(chain: &Chain, cmd: &str) -> (Behavior, Option<String>) {
        let input = json!({"command": cmd});
        let d = chain.decide(
            "Bash",
            Access {
                subject: Subject::Command { field: "command" },
                allowed_by_default: false,
            },
            input.as_object().unwrap(),
            None,
        );
        (d.behavior, d.level.map(|l| l.to_string()))
    }

    /// How many decisions the chain has kept.
    fn cached_decisions(chain: &Chain) -> usize {
        let cache = chain.read_by_name();
        cache.values().flatten().filter(|d| d.is_some()).count()
    }

    #[test]
    fn narrowing_rules_add_up_and_allows_need_every_level() {
        let root =
            policy(json!({"allow": ["Bash(cargo *)", "Bash(git *)"], "deny": ["Bash(rm *)"]}));
        let child = policy(
            json!({"allow": ["Bash(cargo test)", "Bash(make *)"], "deny": ["Bash(git push *)"]}),
        );
        let chain = Chain::new(
            level(&root, Mode::Default, "session"),
            [level(&child, Mode::Default, "tester")],
        );
        let rows = [
            // Allowed by both levels.
            ("cargo test", Behavior::Allow, Some("tester")),
            // The parent allows, the child has no rule: the child's level asks.
            ("cargo build", Behavior::Ask, Some("tester")),
            // Only the child allows: its allow does not count.
            ("make all", Behavior::Ask, Some("session")),
            // The parent's deny holds in the child.
            ("rm -rf x", Behavior::Deny, Some("session")),
            // The child's own deny adds to the parent's.
            ("git push origin main", Behavior::Deny, Some("tester")),
        ];
        for (cmd, want, by) in rows {
            assert_eq!(bash(&chain, cmd), (want, by.map(String::from)), "{cmd}");
        }
    }

    #[test]
    fn a_name_only_tool_is_decided_once_per_chain_and_the_same_way() {
        let root = policy(json!({"allow": ["Lookup"], "deny": ["Secret"]}));
        let child = policy(json!({"allow": ["Lookup", "Other"]}));
        let chain = Chain::new(
            level(&root, Mode::Default, "session"),
            [level(&child, Mode::Default, "child")],
        );
        let none = Map::new();
        let name = |allowed_by_default| Access {
            subject: Subject::Name,
            allowed_by_default,
        };
        for _ in 0..2 {
            for (tool, by_default, want) in [
                ("Lookup", false, Behavior::Allow),
                ("Secret", false, Behavior::Deny),
                ("Other", false, Behavior::Ask),
                ("Other", true, Behavior::Allow),
            ] {
                let cached = chain.decide(tool, name(by_default), &none, None);
                let fresh = chain.decide_levels(tool, name(by_default), &none, None);
                assert_eq!(cached, fresh, "{tool}");
                assert_eq!(cached.behavior, want, "{tool} {by_default}");
            }
        }
        assert_eq!(cached_decisions(&chain), 4);
        // A hook's verdict is never cached.
        let hooked = chain.decide("Other", name(false), &none, Some(HookVerdict::Allow));
        assert_eq!(hooked.behavior, Behavior::Allow);
        assert_eq!(cached_decisions(&chain), 4);
    }

    #[test]
    fn a_level_that_adds_nothing_is_left_out() {
        let root = policy(json!({}));
        let chain = Chain::new(
            level(&root, Mode::Default, "session"),
            [
                level(&root, Mode::Default, "a"),
                level(&root, Mode::Plan, "b"),
                level(&root, Mode::Plan, "c"),
            ],
        );
        let labels: Vec<&str> = chain.levels().iter().map(|l| &*l.label).collect();
        assert_eq!(labels, ["session", "b"]);
        assert_eq!(chain.innermost().mode, Mode::Plan);
    }

    #[test]
    fn a_child_in_bypass_under_a_default_parent_gains_nothing() {
        let root = policy(json!({}));
        let mode = narrow_mode(Mode::Default, Some(Mode::BypassPermissions));
        let chain = Chain::new(
            level(&root, Mode::Default, "session"),
            [level(&root, mode, "child")],
        );
        assert_eq!(bash(&chain, "touch x").0, Behavior::Ask);
        // Even a level decided in bypass still needs every level above it to allow.
        let forced = Chain::new(
            level(&root, Mode::Default, "session"),
            [level(&root, Mode::BypassPermissions, "child")],
        );
        assert_eq!(
            bash(&forced, "touch x"),
            (Behavior::Ask, Some("session".into()))
        );
    }

    #[test]
    fn modes_only_narrow() {
        use Mode::*;
        let rows = [
            (Default, None, Default),
            (BypassPermissions, None, BypassPermissions),
            (Default, Some(BypassPermissions), Default),
            (AcceptEdits, Some(BypassPermissions), AcceptEdits),
            (
                BypassPermissions,
                Some(BypassPermissions),
                BypassPermissions,
            ),
            (Default, Some(AcceptEdits), Default),
            (Plan, Some(AcceptEdits), Plan),
            (DontAsk, Some(AcceptEdits), DontAsk),
            (BypassPermissions, Some(AcceptEdits), AcceptEdits),
            (AcceptEdits, Some(AcceptEdits), AcceptEdits),
            (BypassPermissions, Some(Default), Default),
            (Default, Some(Plan), Plan),
            (Default, Some(DontAsk), DontAsk),
            (DontAsk, Some(Default), Default),
        ];
        for (parent, own, want) in rows {
            assert_eq!(narrow_mode(parent, own), want, "{parent:?} {own:?}");
        }
    }

    #[test]
    fn dont_ask_anywhere_in_the_chain_turns_an_ask_into_a_deny() {
        let root = policy(json!({}));
        for (top, below) in [
            (Mode::DontAsk, Mode::Default),
            (Mode::Default, Mode::DontAsk),
        ] {
            let chain = Chain::new(level(&root, top, "session"), [level(&root, below, "c")]);
            assert_eq!(
                bash(&chain, "touch x").0,
                Behavior::Deny,
                "{top:?} {below:?}"
            );
        }
    }
}
