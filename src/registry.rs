//! Which tools exist: the built-in and registered tools, the `--tools` selection, aliases, and
//! the compiled schema of each. Selection only; permission is the `permission` stage's business.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use crate::tool::Tool;

/// A tool in the effective registry, with its schema compiled once.
pub struct ToolEntry {
    /// The canonical name, shared: every call of the tool carries it without copying.
    pub name: Arc<str>,
    /// The tool.
    pub tool: Arc<dyn Tool>,
    /// Its input schema (kept for coercion, which walks it).
    pub schema: Value,
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
        /// The compiler's message.
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
pub enum Resolution {
    /// A tool of the effective registry.
    Found(Arc<ToolEntry>),
    /// Not in the effective registry; `canonical` is set when the name (or its alias) names a
    /// known tool that is not selected or was removed.
    Unavailable {
        /// The canonical name, if the name resolved to a known tool.
        canonical: Option<String>,
    },
}

/// The effective registry: selected tools minus removed ones, with aliases.
#[derive(Debug, Default)]
pub struct Registry {
    effective: HashMap<String, Arc<ToolEntry>>,
    known: Vec<String>,
    aliases: HashMap<String, String>,
}

impl Registry {
    /// Builds the registry from every known tool, the selection, the aliases (with the file each
    /// came from) and a predicate for tools removed by a bare-name deny rule.
    pub fn build(
        tools: Vec<Arc<dyn Tool>>,
        selection: &Selection,
        aliases: &BTreeMap<String, String>,
        alias_files: &BTreeMap<String, PathBuf>,
        removed: impl Fn(&str) -> bool,
    ) -> Result<Self, RegistryError> {
        let mut all: BTreeMap<String, Arc<dyn Tool>> = BTreeMap::new();
        for tool in tools {
            let name = tool.name().to_string();
            if all.insert(name.clone(), tool).is_some() {
                return Err(RegistryError::Duplicate { name });
            }
        }
        let known: Vec<String> = all.keys().cloned().collect();
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
            if !all.contains_key(target) {
                return Err(RegistryError::AliasDangling {
                    alias: alias.clone(),
                    target: target.clone(),
                    file: file_of(alias),
                });
            }
        }
        let selected: Vec<String> = match selection {
            Selection::All => known.clone(),
            Selection::Only(names) => {
                for name in names {
                    if !all.contains_key(name) {
                        return Err(RegistryError::UnknownTool {
                            name: name.clone(),
                            known: known.join(", "),
                        });
                    }
                }
                names.clone()
            }
        };
        let mut effective = HashMap::new();
        for name in selected {
            if removed(&name) {
                continue;
            }
            let tool = all[&name].clone();
            let schema = tool.input_schema();
            let validator =
                jsonschema::validator_for(&schema).map_err(|e| RegistryError::BadSchema {
                    name: name.clone(),
                    message: e.to_string(),
                })?;
            let shared: Arc<str> = Arc::from(name.as_str());
            effective.insert(
                name,
                Arc::new(ToolEntry {
                    name: shared,
                    tool,
                    schema,
                    validator,
                }),
            );
        }
        Ok(Self {
            effective,
            known,
            aliases: aliases
                .iter()
                .map(|(a, t)| (a.clone(), t.clone()))
                .collect(),
        })
    }

    /// Resolves a name as the model wrote it: a canonical name, or one alias hop.
    pub fn resolve(&self, name: &str) -> Resolution {
        let canonical = if self.known.iter().any(|k| k == name) {
            name
        } else if let Some(target) = self.aliases.get(name) {
            target.as_str()
        } else {
            return Resolution::Unavailable { canonical: None };
        };
        match self.effective.get(canonical) {
            Some(entry) => Resolution::Found(entry.clone()),
            None => Resolution::Unavailable {
                canonical: Some(canonical.to_string()),
            },
        }
    }

    /// The names of the tools that exist for this run, sorted.
    pub fn available(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.effective.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::noop::Noop;

    fn tools() -> Vec<Arc<dyn Tool>> {
        vec![Arc::new(Noop::named("Bash")), Arc::new(Noop::named("Read"))]
    }

    fn aliases(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
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
    fn alias_errors() {
        let none = BTreeMap::new();
        for (pairs, needle) in [
            (
                vec![("Shell", "Sh"), ("Sh", "Bash")],
                "which is itself an alias",
            ),
            (vec![("Shell", "Nope")], "which is not a tool"),
            (vec![("Bash", "Read")], "shadows the tool"),
        ] {
            let err = Registry::build(tools(), &Selection::All, &aliases(&pairs), &none, |_| false)
                .unwrap_err();
            assert!(err.to_string().contains(needle), "{err}");
        }
        let err = Registry::build(
            tools(),
            &Selection::parse("Bash,Grep"),
            &BTreeMap::new(),
            &none,
            |_| false,
        )
        .unwrap_err();
        assert!(err.to_string().contains("unknown tool \"Grep\""), "{err}");
    }

    #[test]
    fn resolution_is_one_hop_and_respects_selection() {
        let r = Registry::build(
            tools(),
            &Selection::parse("Read"),
            &aliases(&[("Shell", "Bash"), ("Cat", "Read")]),
            &BTreeMap::new(),
            |_| false,
        )
        .unwrap();
        assert!(matches!(r.resolve("Cat"), Resolution::Found(e) if e.tool.name() == "Read"));
        assert!(
            matches!(r.resolve("Shell"), Resolution::Unavailable { canonical: Some(c) } if c == "Bash")
        );
        assert!(matches!(
            r.resolve("Nope"),
            Resolution::Unavailable { canonical: None }
        ));
        let r = Registry::build(
            tools(),
            &Selection::All,
            &BTreeMap::new(),
            &BTreeMap::new(),
            |n| n == "Bash",
        )
        .unwrap();
        assert_eq!(r.available(), vec!["Read"]);
    }
}
