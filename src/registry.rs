//! Which tools exist: the built-in and registered tools, the tools added while toolrt runs,
//! the `--tools` selection, aliases, and the compiled schema of each. Selection only;
//! permission is the `permission` stage's business.
//!
//! The registry can change while it serves: [`Registry::set_group`] replaces the tools of one
//! group (an embedder's set, an MCP server's) and publishes a new snapshot. Lookups read the
//! current snapshot without a lock; a call keeps the [`ToolEntry`] it resolved, so a change
//! never touches a call in flight, and a removed tool's later calls are `unavailable`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use serde_json::Value;

use crate::input_shape::InputShape;
use crate::tool::Tool;

/// A tool in the effective registry, with its schema compiled once.
pub(crate) struct ToolEntry {
    /// The canonical name, shared: every call of the tool carries it without copying.
    pub name: Arc<str>,
    /// The tool.
    pub tool: Arc<dyn Tool>,
    /// Its input schema; `shape` is what coercion and the length check read of it, read once.
    pub schema: Value,
    pub shape: InputShape,
    /// The compiled validator.
    pub validator: jsonschema::Validator,
}

impl std::fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEntry")
            .field("name", &self.name)
            .finish()
    }
}

/// `--tools`: which of the known tools exist for this run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Every built-in (and registered) tool: `default`.
    All,
    /// Exactly these names (`""` is the empty list).
    Only(Vec<String>),
}

impl Selection {
    /// Whether `name` is selected. An MCP server's name alone (`mcp__srv`) selects every tool
    /// of that server, as in rules.
    pub fn allows(&self, name: &str) -> bool {
        match self {
            Selection::All => true,
            Selection::Only(names) => names.iter().any(|n| {
                n == name
                    || n.strip_prefix("mcp__").is_some_and(|server| {
                        !server.contains("__") && crate::mcp::names::server_of(name) == Some(server)
                    })
            }),
        }
    }

    /// Parses the `--tools` value: `""` = none, `default` = all, else a comma list.
    pub fn parse(value: &str) -> Self {
        let value = value.trim();
        if value == "default" {
            return Selection::All;
        }
        Selection::Only(
            value
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect(),
        )
    }
}

/// A registry that cannot be built. `Display` says what and where.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegistryError {
    /// `--tools` names a tool that does not exist.
    #[error("--tools: unknown tool {name:?} (known tools: {known})")]
    UnknownTool {
        /// The name.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// An alias targets another alias.
    #[error(
        "{file}: aliases.{alias}: points at {target:?}, which is itself an alias (aliases take a single hop)"
    )]
    AliasChain {
        /// The alias.
        alias: String,
        /// Its target.
        target: String,
        /// Where it is defined.
        file: String,
    },
    /// An alias targets no known tool.
    #[error("{file}: aliases.{alias}: points at {target:?}, which is not a tool")]
    AliasDangling {
        /// The alias.
        alias: String,
        /// Its target.
        target: String,
        /// Where it is defined.
        file: String,
    },
    /// An alias has the name of a real tool.
    #[error("{file}: aliases.{alias}: shadows the tool of the same name")]
    AliasShadows {
        /// The alias.
        alias: String,
        /// Where it is defined.
        file: String,
    },
    /// A tool's input schema does not compile.
    #[error("tool {name}: invalid input schema: {message}")]
    BadSchema {
        /// The tool.
        name: String,
        /// The compiler's message, cut when long (it may quote a schema's value whole).
        message: String,
    },
    /// Two tools share a name.
    #[error("tool {name} is registered twice")]
    Duplicate {
        /// The name.
        name: String,
    },
}

/// How a name resolved.
#[derive(Debug, Clone)]
pub(crate) enum Resolution {
    /// A tool of the effective registry.
    Found(Arc<ToolEntry>),
    /// Not in the effective registry; `canonical` is set when the name (or its alias) names a
    /// known tool that is not selected or was removed.
    Unavailable {
        /// The canonical name, if the name resolved to a known tool.
        canonical: Option<String>,
    },
}

/// Whether a bare-name deny rule removes a tool (asked for every tool, added ones too).
pub(crate) type Removed = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// What decides which names exist, besides the tools themselves.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Naming<'a> {
    /// `--tools`.
    pub selection: &'a Selection,
    /// Aliases (settings `aliases`): alias → canonical name, one hop.
    pub aliases: &'a BTreeMap<String, String>,
    /// The settings file each alias comes from, for errors.
    pub alias_files: &'a BTreeMap<String, PathBuf>,
    /// Name prefixes of tools that are added while running: a `--tools` name or an alias
    /// target with one of them may name a tool that does not exist yet.
    pub late_prefixes: &'a [String],
}

/// The effective registry: selected tools minus removed ones, with aliases. Built from the tools
/// known at start-up; groups of tools come and go while it serves ([`Registry::set_group`]).
pub(crate) struct Registry {
    current: ArcSwap<Snapshot>,
    base: Base,
    /// Every group's tools (compiled), by group; the lock also serialises writers.
    groups: Mutex<BTreeMap<String, Group>>,
}

/// The tools of one group.
#[derive(Default)]
struct Group {
    entries: Vec<Arc<ToolEntry>>,
    /// Whether `--tools` applies to them.
    selected: Selected,
}

/// Whether `--tools` applies to a group's tools.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Selected {
    /// Only the tools `--tools` selects exist (MCP servers', a library user's).
    #[default]
    BySelection,
    /// Every tool of the group exists (`--tools` names tools known at start-up; a client that
    /// registers a tool has chosen it). Bare-name deny rules still remove them.
    Always,
}

/// What does not change after the build.
struct Base {
    /// The tools known at start-up that are in the effective registry.
    fixed: HashMap<String, Arc<ToolEntry>>,
    /// The names of every tool known at start-up, selected or not.
    fixed_known: HashSet<String>,
    selection: Selection,
    aliases: HashMap<String, String>,
    removed: Removed,
}

/// One published state of the registry.
#[derive(Default)]
struct Snapshot {
    effective: HashMap<String, Arc<ToolEntry>>,
    /// Every tool name known now, selected or not.
    known: HashSet<String>,
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            current: ArcSwap::from_pointee(Snapshot::default()),
            base: Base {
                fixed: HashMap::new(),
                fixed_known: HashSet::new(),
                selection: Selection::All,
                aliases: HashMap::new(),
                removed: Arc::new(|_| false),
            },
            groups: Mutex::new(BTreeMap::new()),
        }
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("available", &self.available())
            .finish()
    }
}

/// What one [`Registry::set_group`] changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct GroupChange {
    /// Names now in the effective registry that were not before, sorted.
    pub added: Vec<String>,
    /// Names no longer in it, sorted.
    pub removed: Vec<String>,
    /// How many of the group's tools are in the effective registry now.
    pub available: usize,
    /// Tools of the group that were left out, each with why (a taken name, a schema that does
    /// not compile).
    pub skipped: Vec<String>,
}

fn compile(name: &str, tool: Arc<dyn Tool>) -> Result<Arc<ToolEntry>, RegistryError> {
    let schema = tool.input_schema();
    let validator = jsonschema::validator_for(&schema).map_err(|e| RegistryError::BadSchema {
        name: name.to_string(),
        message: crate::quote::clipped(&e.to_string()).into_owned(),
    })?;
    Ok(Arc::new(ToolEntry {
        name: Arc::from(name),
        tool,
        shape: InputShape::of(&schema),
        schema,
        validator,
    }))
}

impl Registry {
    /// Builds the registry from every tool known at start-up, the names around them and a
    /// predicate for tools removed by a bare-name deny rule.
    pub(crate) fn build(
        tools: Vec<Arc<dyn Tool>>,
        naming: Naming<'_>,
        removed: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> Result<Self, RegistryError> {
        let Naming {
            selection,
            aliases,
            alias_files,
            late_prefixes,
        } = naming;
        let mut all: BTreeMap<String, Arc<dyn Tool>> = BTreeMap::new();
        for tool in tools {
            let name = tool.name().to_string();
            if all.insert(name.clone(), tool).is_some() {
                return Err(RegistryError::Duplicate { name });
            }
        }
        let known: Vec<String> = all.keys().cloned().collect();
        let late = |name: &str| late_prefixes.iter().any(|p| name.starts_with(p.as_str()));
        let file_of = |alias: &str| {
            alias_files
                .get(alias)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "settings".into())
        };
        for (alias, target) in aliases {
            if all.contains_key(alias) {
                return Err(RegistryError::AliasShadows {
                    alias: alias.clone(),
                    file: file_of(alias),
                });
            }
            if aliases.contains_key(target) {
                return Err(RegistryError::AliasChain {
                    alias: alias.clone(),
                    target: target.clone(),
                    file: file_of(alias),
                });
            }
            if !all.contains_key(target) && !late(target) {
                return Err(RegistryError::AliasDangling {
                    alias: alias.clone(),
                    target: target.clone(),
                    file: file_of(alias),
                });
            }
        }
        if let Selection::Only(names) = selection {
            for name in names {
                if !all.contains_key(name) && !late(name) {
                    return Err(RegistryError::UnknownTool {
                        name: name.clone(),
                        known: known.join(", "),
                    });
                }
            }
        }
        let mut fixed = HashMap::new();
        for (name, tool) in all {
            if !selection.allows(&name) || removed(&name) {
                continue;
            }
            let entry = compile(&name, tool)?;
            fixed.insert(name, entry);
        }
        let base = Base {
            fixed,
            fixed_known: known.into_iter().collect(),
            selection: selection.clone(),
            aliases: aliases
                .iter()
                .map(|(a, t)| (a.clone(), t.clone()))
                .collect(),
            removed: Arc::new(removed),
        };
        let snapshot = Snapshot {
            effective: base.fixed.clone(),
            known: base.fixed_known.clone(),
        };
        Ok(Self {
            current: ArcSwap::from_pointee(snapshot),
            base,
            groups: Mutex::new(BTreeMap::new()),
        })
    }

    /// Resolves a name as the model wrote it: a canonical name, or one alias hop. Takes no lock.
    pub(crate) fn resolve(&self, name: &str) -> Resolution {
        let snapshot = self.current.load();
        if let Some(entry) = snapshot.effective.get(name) {
            return Resolution::Found(entry.clone());
        }
        if snapshot.known.contains(name) {
            return Resolution::Unavailable {
                canonical: Some(name.to_string()),
            };
        }
        match self.base.aliases.get(name) {
            Some(target) => match snapshot.effective.get(target) {
                Some(entry) => Resolution::Found(entry.clone()),
                None => Resolution::Unavailable {
                    canonical: Some(target.clone()),
                },
            },
            None => Resolution::Unavailable { canonical: None },
        }
    }

    /// The names of the tools that exist now, sorted.
    pub(crate) fn available(&self) -> Vec<String> {
        let mut names: Vec<String> = self.current.load().effective.keys().cloned().collect();
        names.sort_unstable();
        names
    }

    /// Every tool that exists now, sorted by name, each with the aliases that name it (sorted).
    pub(crate) fn listing(&self) -> Vec<(Arc<ToolEntry>, Vec<String>)> {
        let snapshot = self.current.load();
        let mut entries: Vec<_> = snapshot
            .effective
            .values()
            .map(|e| (e.clone(), Vec::new()))
            .collect();
        entries.sort_unstable_by(|a, b| a.0.name.cmp(&b.0.name));
        for (entry, aliases) in &mut entries {
            let named = self.base.aliases.iter().filter(|(_, t)| **t == *entry.name);
            aliases.extend(named.map(|(alias, _)| alias.clone()));
            aliases.sort_unstable();
        }
        entries
    }

    /// Replaces the tools of `group` with `tools` and publishes the result; an empty list
    /// removes the group. The selection and bare-name deny rules apply to every tool; a tool
    /// whose name another tool or an alias already has, or whose schema does not compile, is
    /// left out and reported. Calls in flight keep the entries they resolved.
    pub(crate) fn set_group(&self, group: &str, tools: Vec<Arc<dyn Tool>>) -> GroupChange {
        let mut groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        let mut skipped = Vec::new();
        let entries = self.compile_group(&groups, group, tools, &mut skipped);
        if entries.is_empty() {
            groups.remove(group);
        } else {
            groups.insert(
                group.to_string(),
                Group {
                    entries,
                    selected: Selected::BySelection,
                },
            );
        }
        let mut change = self.publish(&groups, group);
        change.skipped = skipped;
        change
    }

    /// Adds `tools` to `group`, all of them or none: a tool whose name is taken (by a tool
    /// known at start-up, another group's tool, a tool of this group, an alias, another tool
    /// of the list) or whose schema does not compile refuses the whole list, and the reasons
    /// come back, one per refused tool, each naming it. `selected` says whether `--tools`
    /// applies; bare-name deny rules always do.
    pub(crate) fn add_to_group(
        &self,
        group: &str,
        tools: Vec<Arc<dyn Tool>>,
        selected: Selected,
    ) -> Result<GroupChange, Vec<String>> {
        let mut groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        let mut refused = Vec::new();
        let mut entries: Vec<Arc<ToolEntry>> = Vec::with_capacity(tools.len());
        for tool in tools {
            let name = tool.name().to_string();
            if let Some(why) = self.taken(&groups, None, &name, &entries) {
                refused.push(format!("{name}: {why}"));
                continue;
            }
            match compile(&name, tool) {
                Ok(entry) => entries.push(entry),
                Err(e) => refused.push(e.to_string()),
            }
        }
        if !refused.is_empty() {
            return Err(refused);
        }
        let into = groups.entry(group.to_string()).or_insert_with(|| Group {
            entries: Vec::new(),
            selected,
        });
        into.entries.extend(entries);
        Ok(self.publish(&groups, group))
    }

    /// Removes the tools named `names` from `group`, all of them or none: a name that is not
    /// one of the group's tools refuses the whole list, and the reasons come back. Calls in
    /// flight keep the entries they resolved.
    pub(crate) fn remove_from_group(
        &self,
        group: &str,
        names: &[String],
    ) -> Result<GroupChange, Vec<String>> {
        let mut groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        let has = |name: &str| {
            groups
                .get(group)
                .is_some_and(|g| g.entries.iter().any(|e| &*e.name == name))
        };
        let mut refused: Vec<String> = names
            .iter()
            .filter(|n| !has(n))
            .map(|n| format!("{n}: no such tool was registered"))
            .collect();
        let mut seen = HashSet::new();
        for name in names {
            if !seen.insert(name.as_str()) {
                refused.push(format!("{name}: named twice"));
            }
        }
        if !refused.is_empty() {
            return Err(refused);
        }
        if let Some(g) = groups.get_mut(group) {
            g.entries.retain(|e| !names.iter().any(|n| **n == *e.name));
            if g.entries.is_empty() {
                groups.remove(group);
            }
        }
        Ok(self.publish(&groups, group))
    }

    /// Why `name` cannot join a group: an alias has it, or another tool (known at start-up, of
    /// another group than `except`, or among `more`).
    fn taken(
        &self,
        groups: &BTreeMap<String, Group>,
        except: Option<&str>,
        name: &str,
        more: &[Arc<ToolEntry>],
    ) -> Option<&'static str> {
        if self.base.aliases.contains_key(name) {
            return Some("an alias has this name");
        }
        let in_groups = groups
            .iter()
            .filter(|(g, _)| Some(g.as_str()) != except)
            .any(|(_, g)| g.entries.iter().any(|e| &*e.name == name));
        (self.base.fixed_known.contains(name) || in_groups || more.iter().any(|e| &*e.name == name))
            .then_some("another tool already has this name")
    }

    /// Builds and publishes the snapshot of the groups as they are now; what changed, with
    /// `group`'s count.
    fn publish(&self, groups: &BTreeMap<String, Group>, group: &str) -> GroupChange {
        let mut change = GroupChange::default();
        let mut snapshot = Snapshot {
            effective: self.base.fixed.clone(),
            known: self.base.fixed_known.clone(),
        };
        for g in groups.values() {
            for entry in &g.entries {
                snapshot.known.insert(entry.name.to_string());
                if (g.selected == Selected::Always || self.base.selection.allows(&entry.name))
                    && !(self.base.removed)(&entry.name)
                {
                    snapshot
                        .effective
                        .insert(entry.name.to_string(), entry.clone());
                }
            }
        }
        change.available = groups.get(group).map_or(0, |g| {
            g.entries
                .iter()
                .filter(|e| snapshot.effective.contains_key(&*e.name))
                .count()
        });
        let before = self.current.load();
        let missing = |from: &Snapshot, to: &Snapshot| -> Vec<String> {
            let mut names: Vec<String> = from
                .effective
                .keys()
                .filter(|k| !to.effective.contains_key(*k))
                .cloned()
                .collect();
            names.sort_unstable();
            names
        };
        change.added = missing(&snapshot, &before);
        change.removed = missing(&before, &snapshot);
        self.current.store(Arc::new(snapshot));
        change
    }

    /// The compiled entries of a group's new tools; those that cannot join are left out, with
    /// why, in `skipped`.
    fn compile_group(
        &self,
        groups: &BTreeMap<String, Group>,
        group: &str,
        tools: Vec<Arc<dyn Tool>>,
        skipped: &mut Vec<String>,
    ) -> Vec<Arc<ToolEntry>> {
        let mut entries: Vec<Arc<ToolEntry>> = Vec::with_capacity(tools.len());
        for tool in tools {
            let name = tool.name().to_string();
            if let Some(why) = self.taken(groups, Some(group), &name, &entries) {
                skipped.push(format!("{name}: {why}"));
                continue;
            }
            match compile(&name, tool) {
                Ok(entry) => entries.push(entry),
                Err(e) => skipped.push(e.to_string()),
            }
        }
        entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::noop::Noop;

    fn tools() -> Vec<Arc<dyn Tool>> {
        vec![Arc::new(Noop::named("Bash")), Arc::new(Noop::named("Read"))]
    }

    fn noops(names: &[&str]) -> Vec<Arc<dyn Tool>> {
        names
            .iter()
            .map(|n| Arc::new(Noop::named(n)) as Arc<dyn Tool>)
            .collect()
    }

    fn aliases(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    /// A registry of `tools()` with this selection, aliases and late prefixes.
    fn build(
        selection: &str,
        alias_pairs: &[(&str, &str)],
        late: &[&str],
        removed: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> Result<Registry, RegistryError> {
        let late: Vec<String> = late.iter().map(|s| s.to_string()).collect();
        Registry::build(
            tools(),
            Naming {
                selection: &Selection::parse(selection),
                aliases: &aliases(alias_pairs),
                alias_files: &BTreeMap::new(),
                late_prefixes: &late,
            },
            removed,
        )
    }

    #[test]
    fn listing_names_each_tool_once_with_its_aliases() {
        let r = build(
            "Bash",
            &[("Shell", "Bash"), ("Sh", "Bash"), ("R", "Read")],
            &[],
            |_| false,
        )
        .unwrap();
        let listing: Vec<(String, Vec<String>)> = r
            .listing()
            .into_iter()
            .map(|(e, a)| (e.name.to_string(), a))
            .collect();
        // Read is not selected: neither it nor its alias is listed.
        assert_eq!(
            listing,
            [(
                "Bash".to_string(),
                vec!["Sh".to_string(), "Shell".to_string()]
            )]
        );
    }

    fn found(r: &Registry, name: &str) -> Option<String> {
        match r.resolve(name) {
            Resolution::Found(e) => Some(e.name.to_string()),
            Resolution::Unavailable { .. } => None,
        }
    }

    #[test]
    fn selection_parses() {
        assert_eq!(Selection::parse(""), Selection::Only(vec![]));
        assert_eq!(Selection::parse("default"), Selection::All);
        assert_eq!(
            Selection::parse("Bash, Read"),
            Selection::Only(vec!["Bash".into(), "Read".into()])
        );
    }

    #[test]
    fn alias_and_selection_errors() {
        for (selection, pairs, late, needle) in [
            (
                "default",
                vec![("Shell", "Sh"), ("Sh", "Bash")],
                vec![],
                "which is itself an alias",
            ),
            (
                "default",
                vec![("Shell", "Nope")],
                vec![],
                "which is not a tool",
            ),
            ("default", vec![("Shell", "Nope")], vec!["Nop"], ""),
            (
                "default",
                vec![("Bash", "Read")],
                vec![],
                "shadows the tool",
            ),
            ("Bash,Grep", vec![], vec![], "unknown tool \"Grep\""),
            ("Bash,Grep", vec![], vec!["Gr"], ""),
        ] {
            match build(selection, &pairs, &late, |_| false) {
                Ok(_) => assert_eq!(needle, "", "{selection} {pairs:?} {late:?} built"),
                Err(err) => assert!(
                    !needle.is_empty() && err.to_string().contains(needle),
                    "{selection} {pairs:?} {late:?}: {err}"
                ),
            }
        }
    }

    #[test]
    fn resolution_is_one_hop_and_respects_selection() {
        let r = build("Read", &[("Shell", "Bash"), ("Cat", "Read")], &[], |_| {
            false
        })
        .unwrap();
        assert_eq!(found(&r, "Cat").as_deref(), Some("Read"));
        assert!(
            matches!(r.resolve("Shell"), Resolution::Unavailable { canonical: Some(c) } if c == "Bash")
        );
        assert!(matches!(
            r.resolve("Nope"),
            Resolution::Unavailable { canonical: None }
        ));
        let r = build("default", &[], &[], |n| n == "Bash").unwrap();
        assert_eq!(r.available(), vec!["Read"]);
    }

    #[test]
    fn groups_come_and_go_under_selection_aliases_and_deny_rules() {
        let r = build(
            "Read,Probe,Gone,Late",
            &[("Look", "Probe"), ("Later", "Late")],
            &["Probe", "Gone", "Late"],
            |n| n == "Gone",
        )
        .unwrap();
        assert_eq!(found(&r, "Look"), None);
        // Selected, not selected, removed by a deny rule.
        let change = r.set_group("a", noops(&["Probe", "Other", "Gone"]));
        assert_eq!(change.added, vec!["Probe"]);
        assert_eq!(change.available, 1);
        assert!(change.skipped.is_empty(), "{change:?}");
        assert_eq!(found(&r, "Probe").as_deref(), Some("Probe"));
        assert_eq!(found(&r, "Look").as_deref(), Some("Probe"));
        assert!(
            matches!(r.resolve("Other"), Resolution::Unavailable { canonical: Some(c) } if c == "Other")
        );
        assert_eq!(found(&r, "Gone"), None);
        assert_eq!(r.available(), vec!["Probe", "Read"]);
        // Names taken by a start-up tool, another group, an alias, or twice in one list.
        let change = r.set_group("b", noops(&["Bash", "Probe", "Look", "Late", "Late"]));
        assert_eq!(change.added, vec!["Late"]);
        assert_eq!(change.skipped.len(), 4, "{change:?}");
        assert_eq!(found(&r, "Later").as_deref(), Some("Late"));
        // A call that resolved keeps its entry; a removed tool is unavailable afterwards.
        let Resolution::Found(held) = r.resolve("Probe") else {
            panic!("Probe resolves")
        };
        let change = r.set_group("a", Vec::new());
        assert_eq!(change.removed, vec!["Probe"]);
        assert_eq!(change.available, 0);
        assert_eq!(found(&r, "Probe"), None);
        assert_eq!(found(&r, "Look"), None);
        assert_eq!(&*held.name, "Probe");
        // The name is free again.
        assert_eq!(r.set_group("c", noops(&["Probe"])).added, vec!["Probe"]);
        assert_eq!(r.available(), vec!["Late", "Probe", "Read"]);
    }

    #[test]
    fn a_tool_whose_schema_does_not_compile_is_skipped() {
        struct Bad;
        #[async_trait::async_trait]
        impl Tool for Bad {
            fn name(&self) -> &str {
                "Bad"
            }
            fn description(&self) -> &str {
                "bad schema"
            }
            fn input_schema(&self) -> Value {
                serde_json::json!({"type": 12})
            }
            async fn call(
                &self,
                _: crate::call::Input,
                _: crate::tool::ToolContext,
            ) -> crate::tool::ToolOutput {
                crate::tool::ToolOutput::success("")
            }
        }
        let r = build("default", &[], &[], |_| false).unwrap();
        let change = r.set_group("g", vec![Arc::new(Bad)]);
        assert_eq!(change.available, 0);
        assert!(
            change.skipped[0].contains("invalid input schema"),
            "{change:?}"
        );
        assert_eq!(found(&r, "Bad"), None);
    }
}
