//! Settings files: loading, type checks that name the file and key, and merging.
//!
//! Several files may be given. Rule lists pool across files, hooks merge, and for scalars the
//! later file wins. The `permissions` and `hooks` objects are handed on whole to their stages,
//! which parse them with the file path for error context.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::protocol::json_type;

/// A settings problem. `Display` names the file, the key and what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file could not be read.
    #[error("{file}: cannot read settings file: {source}")]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid JSON.
    #[error("{file}: not valid JSON: {message}")]
    Json {
        /// The file.
        file: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// A known key has the wrong type or value.
    #[error("{file}: {key}: {expected}")]
    Key {
        /// The file.
        file: PathBuf,
        /// The key path, e.g. `limits.bash_chars`.
        key: String,
        /// What was expected (and what was found).
        expected: String,
    },
}

/// One loaded settings file.
#[derive(Debug, Clone)]
pub struct SettingsFile {
    /// Where it was read from (absolute).
    pub path: PathBuf,
    /// Its top-level object.
    pub root: Map<String, Value>,
}

/// Output-budget limits in characters (docs/SEMANTICS.md §6), configurable under `limits`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// A successful Bash result over this is externalized (`limits.bash_chars`).
    pub bash_chars: usize,
    /// A failed result over this keeps head and tail (`limits.error_chars`).
    pub error_chars: usize,
    /// Any other tool (`limits.tool_chars`).
    pub tool_chars: usize,
    /// MCP tools (`limits.mcp_chars`).
    pub mcp_chars: usize,
    /// Characters of preview after the notice (`limits.preview_chars`).
    pub preview_chars: usize,
    /// A successful result's limit for one tool, overriding its class (`limits.per_tool`,
    /// e.g. `{"Read": 80000}`).
    pub per_tool: std::collections::BTreeMap<String, usize>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            bash_chars: 30_000,
            error_chars: 10_000,
            tool_chars: 50_000,
            mcp_chars: 100_000,
            preview_chars: 2_000,
            per_tool: Default::default(),
        }
    }
}

/// Everything the runtime takes from settings files, merged.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The files, in the order given (stages that pool lists walk them all).
    pub files: Vec<SettingsFile>,
    /// `aliases`: name → canonical tool name (later files win per name).
    pub aliases: BTreeMap<String, String>,
    /// Where each alias was defined, for errors.
    pub alias_files: BTreeMap<String, PathBuf>,
    /// `limits`.
    pub limits: Limits,
    /// `env`: variables set for every process toolrt starts (Bash commands, background tasks,
    /// hooks), merged across files (a later file wins per name).
    pub env: BTreeMap<String, String>,
    /// `toolrt.envScrub`: glob patterns of variable names removed from tool and hook processes.
    pub env_scrub: Vec<String>,
    /// `tools.requireReadBeforeEdit` (default true).
    pub require_read_before_edit: bool,
    /// Warnings to print (unknown keys), each once; errors with `--strict-settings`.
    pub warnings: Vec<String>,
}

/// What toolrt knows about one settings key's value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Known {
    /// A value whose inside holds no settings keys (a list, a scalar, or a map of names such as
    /// `aliases`), or whose stage checks its own keys (`hooks`).
    Value,
    /// An object whose keys are these, each with what it holds.
    Object(&'static [(&'static str, Known)]),
}

/// Every settings key toolrt knows, as a tree. A key missing here warns as unknown, naming the
/// known key it most resembles (`permissions.alow` → `permissions.allow`), and is an error with
/// `--strict-settings`. When toolrt learns a key, add it here.
pub(crate) const KNOWN_KEYS: Known = Known::Object(&[
    ("$schema", Known::Value),
    (
        "permissions",
        Known::Object(&[
            ("allow", Known::Value),
            ("ask", Known::Value),
            ("deny", Known::Value),
            ("additionalDirectories", Known::Value),
            ("defaultMode", Known::Value),
            ("disableBypassPermissionsMode", Known::Value),
        ]),
    ),
    // Events and their handlers: the hook configuration checks its own keys.
    ("hooks", Known::Value),
    ("aliases", Known::Value),
    (
        "limits",
        Known::Object(&[
            ("bash_chars", Known::Value),
            ("error_chars", Known::Value),
            ("tool_chars", Known::Value),
            ("mcp_chars", Known::Value),
            ("preview_chars", Known::Value),
            ("per_tool", Known::Value),
        ]),
    ),
    // Variable names → values: any name is a variable, not a key.
    ("env", Known::Value),
    (
        "toolrt",
        Known::Object(&[("envScrub", Known::Value), ("maxAgentDepth", Known::Value)]),
    ),
    // Agent types → their definitions (`scope::types` checks each type's keys).
    ("agents", Known::Value),
    (
        "tools",
        Known::Object(&[("requireReadBeforeEdit", Known::Value)]),
    ),
    ("mcpServers", Known::Value),
    // The Bash sandbox (`sandbox::config` reads and checks it).
    (
        "sandbox",
        Known::Object(&[
            ("enabled", Known::Value),
            ("failIfUnavailable", Known::Value),
            ("autoAllowBashIfSandboxed", Known::Value),
            ("excludedCommands", Known::Value),
            ("allowUnsandboxedCommands", Known::Value),
            (
                "filesystem",
                Known::Object(&[
                    ("allowWrite", Known::Value),
                    ("denyWrite", Known::Value),
                    ("denyRead", Known::Value),
                    ("allowRead", Known::Value),
                ]),
            ),
            (
                "network",
                Known::Object(&[
                    ("allowedDomains", Known::Value),
                    ("deniedDomains", Known::Value),
                    ("allowLocalBinding", Known::Value),
                    ("allowAllUnixSockets", Known::Value),
                ]),
            ),
        ]),
    ),
    // Approvals of the project's .mcp.json servers (read by `mcp::config`).
    ("enableAllProjectMcpServers", Known::Value),
    ("enabledMcpjsonServers", Known::Value),
    ("disabledMcpjsonServers", Known::Value),
]);

impl Known {
    fn keys(&self) -> &'static [(&'static str, Known)] {
        match self {
            Known::Value => &[],
            Known::Object(keys) => keys,
        }
    }

    /// Every known key as a dotted path.
    fn paths(&self, prefix: &str, out: &mut Vec<String>) {
        for (key, known) in self.keys() {
            let path = join_key(prefix, key);
            known.paths(&path, out);
            out.push(path);
        }
    }
}

fn join_key(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// The dotted paths of every key of `value` that `known` does not know, below `prefix`.
fn unknown_keys(value: &Map<String, Value>, known: Known, prefix: &str, out: &mut Vec<String>) {
    for (key, inner) in value {
        match known.keys().iter().find(|(k, _)| k == key) {
            None => out.push(join_key(prefix, key)),
            Some((_, Known::Object(_))) => {
                if let Value::Object(map) = inner {
                    let sub = known.keys().iter().find(|(k, _)| k == key).map(|(_, k)| *k);
                    if let Some(sub) = sub {
                        unknown_keys(map, sub, &join_key(prefix, key), out);
                    }
                }
            }
            Some((_, Known::Value)) => {}
        }
    }
}

/// The known key an unknown one most likely meant: the closest sibling by edit distance, else a
/// key of that name elsewhere (`defaultMode` at the top level → `permissions.defaultMode`).
pub(crate) fn likely_key(unknown: &str) -> Option<String> {
    let (prefix, name) = match unknown.rsplit_once('.') {
        Some((p, n)) => (p, n),
        None => ("", unknown),
    };
    let mut all = Vec::new();
    KNOWN_KEYS.paths("", &mut all);
    let lower = name.to_lowercase();
    let close = |candidate: &str| {
        let d = strsim::damerau_levenshtein(&lower, &candidate.to_lowercase());
        // One edit for short names, about one in four for longer ones.
        (d <= (lower.chars().count() / 4).max(1)).then_some(d)
    };
    let siblings = all.iter().filter(|p| match p.rsplit_once('.') {
        Some((pp, _)) => pp == prefix,
        None => prefix.is_empty(),
    });
    let leaf = |p: &str| p.rsplit_once('.').map_or(p, |(_, n)| n).to_string();
    siblings
        .filter_map(|p| close(&leaf(p)).map(|d| (d, p)))
        .min_by_key(|(d, _)| *d)
        .map(|(_, p)| p.clone())
        .or_else(|| {
            all.iter()
                .filter(|p| p.as_str() != unknown)
                .filter_map(|p| close(&leaf(p)).map(|d| (d, p)))
                .min_by_key(|(d, _)| *d)
                .map(|(_, p)| p.clone())
        })
}

impl Settings {
    /// Loads and merges the given files, in order.
    pub fn load(paths: &[PathBuf]) -> Result<Self, SettingsError> {
        let mut settings = Settings {
            require_read_before_edit: true,
            ..Default::default()
        };
        for path in paths {
            let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            let text = std::fs::read_to_string(&path).map_err(|source| SettingsError::Read {
                file: path.clone(),
                source,
            })?;
            settings.merge_text(&path, &text)?;
        }
        Ok(settings)
    }

    /// Merges one file's text (already read) into these settings.
    pub fn merge_text(&mut self, path: &Path, text: &str) -> Result<(), SettingsError> {
        let value: Value = serde_json::from_str(text).map_err(|e| SettingsError::Json {
            file: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let Value::Object(root) = value else {
            return Err(key_err(path, "(top level)", "expected an object", &value));
        };
        let mut unknown = Vec::new();
        unknown_keys(&root, KNOWN_KEYS, "", &mut unknown);
        for key in unknown {
            let hint = likely_key(&key)
                .map(|k| format!("; did you mean {k:?}?"))
                .unwrap_or_default();
            self.warnings.push(format!(
                "{}: unknown key {key:?} ignored{hint}",
                path.display()
            ));
        }
        for key in ["permissions", "hooks", "mcpServers"] {
            if let Some(v) = root.get(key)
                && !v.is_object()
            {
                return Err(key_err(path, key, "expected an object", v));
            }
        }
        if let Some(v) = root.get("aliases") {
            self.merge_aliases(path, v)?;
        }
        if let Some(v) = root.get("limits") {
            self.merge_limits(path, v)?;
        }
        if let Some(v) = root.get("env") {
            self.merge_env(path, v)?;
        }
        if let Some(v) = root.get("toolrt") {
            self.merge_toolrt(path, v)?;
        }
        if let Some(v) = root.get("tools") {
            self.merge_tools(path, v)?;
        }
        self.files.push(SettingsFile {
            path: path.to_path_buf(),
            root,
        });
        Ok(())
    }

    /// `aliases`: alias → canonical tool name; a later file wins per alias.
    fn merge_aliases(&mut self, path: &Path, v: &Value) -> Result<(), SettingsError> {
        let Value::Object(map) = v else {
            return Err(key_err(
                path,
                "aliases",
                "expected an object of name → tool name",
                v,
            ));
        };
        for (alias, target) in map {
            let Value::String(target) = target else {
                return Err(key_err(
                    path,
                    &format!("aliases.{alias}"),
                    "expected a tool name (string)",
                    target,
                ));
            };
            self.aliases.insert(alias.clone(), target.clone());
            self.alias_files.insert(alias.clone(), path.to_path_buf());
        }
        Ok(())
    }

    /// `limits`: output budgets in characters, overall and `per_tool`.
    fn merge_limits(&mut self, path: &Path, v: &Value) -> Result<(), SettingsError> {
        let Value::Object(map) = v else {
            return Err(key_err(path, "limits", "expected an object", v));
        };
        for (key, val) in map {
            if key == "per_tool" {
                let Value::Object(tools) = val else {
                    return Err(key_err(
                        path,
                        "limits.per_tool",
                        "expected an object of tool name → characters",
                        val,
                    ));
                };
                for (tool, n) in tools {
                    match n.as_u64() {
                        Some(n) if n > 0 => {
                            self.limits.per_tool.insert(tool.clone(), n as usize);
                        }
                        _ => {
                            return Err(key_err(
                                path,
                                &format!("limits.per_tool.{tool}"),
                                "expected a positive integer (characters)",
                                n,
                            ));
                        }
                    }
                }
                continue;
            }
            let slot = match key.as_str() {
                "bash_chars" => &mut self.limits.bash_chars,
                "error_chars" => &mut self.limits.error_chars,
                "tool_chars" => &mut self.limits.tool_chars,
                "mcp_chars" => &mut self.limits.mcp_chars,
                "preview_chars" => &mut self.limits.preview_chars,
                // Reported with every other unknown key above.
                _ => continue,
            };
            match val.as_u64() {
                Some(n) if n > 0 => *slot = n as usize,
                _ => {
                    return Err(key_err(
                        path,
                        &format!("limits.{key}"),
                        "expected a positive integer (characters)",
                        val,
                    ));
                }
            }
        }
        Ok(())
    }

    /// `toolrt`: toolrt's own settings (`envScrub`).
    fn merge_toolrt(&mut self, path: &Path, v: &Value) -> Result<(), SettingsError> {
        let Value::Object(map) = v else {
            return Err(key_err(path, "toolrt", "expected an object", v));
        };
        // Other keys are reported with every other unknown key above.
        if let Some(val) = map.get("envScrub") {
            let list = string_list(path, "toolrt.envScrub", val)?;
            for pattern in &list {
                if let Err(e) = globset::Glob::new(pattern) {
                    return Err(SettingsError::Key {
                        file: path.to_path_buf(),
                        key: "toolrt.envScrub".into(),
                        expected: format!("invalid glob pattern {pattern:?}: {e}"),
                    });
                }
            }
            self.env_scrub.extend(list);
        }
        Ok(())
    }

    /// `tools`: tool behaviour (`requireReadBeforeEdit`).
    fn merge_tools(&mut self, path: &Path, v: &Value) -> Result<(), SettingsError> {
        let Value::Object(map) = v else {
            return Err(key_err(path, "tools", "expected an object", v));
        };
        if let Some(flag) = map.get("requireReadBeforeEdit") {
            let Value::Bool(b) = flag else {
                return Err(key_err(
                    path,
                    "tools.requireReadBeforeEdit",
                    "expected true or false",
                    flag,
                ));
            };
            self.require_read_before_edit = *b;
        }
        Ok(())
    }

    /// `env`: variable → value. Strings, and numbers or booleans written as their text; a later
    /// file wins per name.
    fn merge_env(&mut self, path: &Path, v: &Value) -> Result<(), SettingsError> {
        let Value::Object(map) = v else {
            return Err(key_err(
                path,
                "env",
                "expected an object of variable name → value",
                v,
            ));
        };
        for (name, val) in map {
            let key = format!("env.{name}");
            if name == "scrub" && val.is_array() {
                // toolrt's scrub list lived here before; a silent change would un-scrub secrets.
                return Err(SettingsError::Key {
                    file: path.to_path_buf(),
                    key,
                    expected: "`env` holds variables to set (name → value); toolrt's list of \
                               variables to remove is now `toolrt.envScrub`"
                        .into(),
                });
            }
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(SettingsError::Key {
                    file: path.to_path_buf(),
                    key,
                    expected: "not a valid environment variable name".into(),
                });
            }
            let text = match val {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                other => return Err(key_err(path, &key, "expected a string", other)),
            };
            if text.contains('\0') {
                return Err(SettingsError::Key {
                    file: path.to_path_buf(),
                    key,
                    expected: "a value cannot hold a NUL character".into(),
                });
            }
            self.env.insert(name.clone(), text);
        }
        Ok(())
    }

    /// The `(file, value)` pairs of one top-level key across all files, in order.
    pub fn sections<'a>(
        &'a self,
        key: &'a str,
    ) -> impl Iterator<Item = (&'a Path, &'a Value)> + 'a {
        self.files
            .iter()
            .filter_map(move |f| f.root.get(key).map(|v| (f.path.as_path(), v)))
    }
}

/// An array of strings, each item's error naming it (`key[i]`).
pub(crate) fn string_list(path: &Path, key: &str, v: &Value) -> Result<Vec<String>, SettingsError> {
    let Value::Array(items) = v else {
        return Err(key_err(path, key, "expected an array of strings", v));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) => Ok(s.clone()),
            other => Err(key_err(
                path,
                &format!("{key}[{i}]"),
                "expected a string",
                other,
            )),
        })
        .collect()
}

/// A key of the wrong type or value: the file, the key, what was expected and what was found.
pub(crate) fn key_err(path: &Path, key: &str, expected: &str, got: &Value) -> SettingsError {
    SettingsError::Key {
        file: path.to_path_buf(),
        key: key.to_string(),
        expected: format!("{expected}, got {}", json_type(got)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merge(text: &str) -> Result<Settings, String> {
        let mut s = Settings {
            require_read_before_edit: true,
            ..Default::default()
        };
        s.merge_text(Path::new("/p/settings.json"), text)
            .map_err(|e| e.to_string())?;
        Ok(s)
    }

    #[test]
    fn errors_name_file_and_key() {
        for (text, needle) in [
            ("{", "/p/settings.json: not valid JSON"),
            (
                "[]",
                "/p/settings.json: (top level): expected an object, got array",
            ),
            (
                r#"{"permissions": []}"#,
                "/p/settings.json: permissions: expected an object, got array",
            ),
            (
                r#"{"aliases": {"Shell": 3}}"#,
                "aliases.Shell: expected a tool name (string), got integer",
            ),
            (
                r#"{"limits": {"bash_chars": "x"}}"#,
                "limits.bash_chars: expected a positive integer",
            ),
            (
                r#"{"toolrt": {"envScrub": "X"}}"#,
                "toolrt.envScrub: expected an array of strings, got string",
            ),
            (
                r#"{"toolrt": {"envScrub": ["["]}}"#,
                "toolrt.envScrub: invalid glob pattern",
            ),
            (
                r#"{"env": {"scrub": ["*_TOKEN"]}}"#,
                "env.scrub: `env` holds variables to set (name → value); toolrt's list of \
                 variables to remove is now `toolrt.envScrub`",
            ),
            (r#"{"env": []}"#, "env: expected an object of variable name"),
            (
                r#"{"env": {"A": {"b": 1}}}"#,
                "env.A: expected a string, got object",
            ),
            (
                r#"{"env": {"A=B": "x"}}"#,
                "env.A=B: not a valid environment variable name",
            ),
            (r#"{"toolrt": 1}"#, "toolrt: expected an object"),
            (
                r#"{"tools": {"requireReadBeforeEdit": "no"}}"#,
                "tools.requireReadBeforeEdit: expected true or false",
            ),
        ] {
            let err = merge(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn later_scalars_win_and_unknown_keys_warn() {
        let mut s =
            merge(r#"{"limits": {"bash_chars": 10}, "aliases": {"Shell": "Bash"}, "colour": 1}"#)
                .unwrap();
        s.merge_text(Path::new("/p/b.json"), r#"{"limits": {"bash_chars": 20}}"#)
            .unwrap();
        assert_eq!(s.limits.bash_chars, 20);
        assert_eq!(s.aliases["Shell"], "Bash");
        assert_eq!(s.warnings.len(), 1);
        assert!(s.warnings[0].contains("\"colour\""));
        assert!(!s.warnings[0].contains("did you mean"), "{}", s.warnings[0]);
        assert_eq!(s.sections("limits").count(), 2);
    }

    #[test]
    fn unknown_keys_name_the_likely_key() {
        let s = merge(
            r#"{"permissions": {"alow": [], "allow": []}, "limits": {"bash_char": 3},
                "tools": {"requireReadBeforEdit": true}, "toolrt": {"envScrubb": []},
                "Permissions": {}, "defaultMode": "plan", "aliases": {"Anything": "Bash"},
                "mcpServers": {"srv": {"command": "x"}}, "model": "opus"}"#,
        )
        .unwrap();
        let want = [
            ("permissions.alow", Some("permissions.allow")),
            ("limits.bash_char", Some("limits.bash_chars")),
            (
                "tools.requireReadBeforEdit",
                Some("tools.requireReadBeforeEdit"),
            ),
            ("toolrt.envScrubb", Some("toolrt.envScrub")),
            ("Permissions", Some("permissions")),
            ("defaultMode", Some("permissions.defaultMode")),
            ("model", None),
        ];
        assert_eq!(s.warnings.len(), want.len(), "{:#?}", s.warnings);
        for (key, likely) in want {
            let w = s
                .warnings
                .iter()
                .find(|w| w.contains(&format!("unknown key {key:?} ignored")))
                .unwrap_or_else(|| panic!("no warning for {key}: {:#?}", s.warnings));
            match likely {
                Some(k) => assert!(w.ends_with(&format!("; did you mean {k:?}?")), "{w}"),
                None => assert!(!w.contains("did you mean"), "{w}"),
            }
        }
    }

    #[test]
    fn env_merges_across_files_and_scrub_lives_under_toolrt() {
        let mut s = merge(
            r#"{"env": {"A": "1", "B": "one", "N": 3, "T": true}, "toolrt": {"envScrub": ["*_TOKEN"]}}"#,
        )
        .unwrap();
        s.merge_text(
            Path::new("/p/b.json"),
            r#"{"env": {"B": "two", "C": ""}, "toolrt": {"envScrub": ["AWS_*"], "x": 1}}"#,
        )
        .unwrap();
        let env: Vec<(&str, &str)> = s
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            env,
            [
                ("A", "1"),
                ("B", "two"),
                ("C", ""),
                ("N", "3"),
                ("T", "true")
            ]
        );
        assert_eq!(s.env_scrub, ["*_TOKEN", "AWS_*"]);
        assert_eq!(s.warnings, ["/p/b.json: unknown key \"toolrt.x\" ignored"]);
    }
}
