//! The `sandbox` settings, merged across files: scalars from the last file that sets them,
//! lists pooled; paths anchored as the reference anchors them; `Edit(…)` and `Read(…)` rules of
//! `permissions` adding writable, unwritable and unreadable paths.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::paths::normalize;
use crate::permission::{EDIT_TOOLS, READ_TOOLS, Rule};
use crate::settings::{Settings, SettingsError, key_err, string_list as strings};

/// Where paths in one settings file are anchored.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Anchors<'a> {
    /// The folder of the settings file (`/x`).
    pub(crate) settings_dir: &'a Path,
    /// The working directory (`./x`, `x`).
    pub(crate) cwd: &'a Path,
    /// The home directory (`~/x`).
    pub(crate) home: &'a Path,
}

/// The `sandbox` settings of every file, merged.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SandboxSettings {
    /// `sandbox.enabled` (default false).
    pub(crate) enabled: bool,
    /// `sandbox.failIfUnavailable` (default false: run unsandboxed, with a warning).
    pub(crate) fail_if_unavailable: bool,
    /// `sandbox.autoAllowBashIfSandboxed` (default true).
    pub(crate) auto_allow: bool,
    /// `sandbox.allowUnsandboxedCommands` (default true).
    pub(crate) allow_unsandboxed: bool,
    /// `sandbox.excludedCommands`: Bash rule patterns of commands run outside the sandbox.
    pub(crate) excluded: Vec<String>,
    /// `sandbox.filesystem.allowWrite` and `Edit(…)` allow rules.
    pub(crate) allow_write: Vec<PathBuf>,
    /// `sandbox.filesystem.denyWrite` and `Edit(…)` deny rules.
    pub(crate) deny_write: Vec<PathBuf>,
    /// `sandbox.filesystem.denyRead` and `Read(…)` deny rules.
    pub(crate) deny_read: Vec<PathBuf>,
    /// `sandbox.filesystem.allowRead`: readable paths inside `deny_read` ones.
    pub(crate) allow_read: Vec<PathBuf>,
    /// `sandbox.network.allowedDomains` and `WebFetch(domain:…)` allow rules.
    pub(crate) allowed_domains: Vec<String>,
    /// `sandbox.network.deniedDomains` and `WebFetch(domain:…)` deny rules.
    pub(crate) denied_domains: Vec<String>,
    /// `sandbox.network.allowLocalBinding`.
    pub(crate) allow_local_binding: bool,
    /// `sandbox.network.allowAllUnixSockets`.
    pub(crate) allow_all_unix_sockets: bool,
    /// Deny rules whose paths the kernel boundary cannot hold (globs other than a trailing
    /// `/**`): while any exists, nothing is auto-allowed for being sandboxed.
    pub(crate) unenforced: Vec<String>,
    /// Start-up warnings (keys parsed but not enforced yet, rules the sandbox cannot use).
    pub(crate) warnings: Vec<String>,
}

impl SandboxSettings {
    /// The defaults, before any file.
    pub(crate) fn new() -> Self {
        Self {
            auto_allow: true,
            allow_unsandboxed: true,
            ..Default::default()
        }
    }

    /// Reads `sandbox` and the path rules of `permissions` from every settings file, in order.
    pub(crate) fn load(
        settings: &Settings,
        cwd: &Path,
        home: &Path,
    ) -> Result<Self, SettingsError> {
        let mut out = Self::new();
        for file in &settings.files {
            let dir = file.path.parent().unwrap_or(Path::new("/"));
            let anchors = Anchors {
                settings_dir: dir,
                cwd,
                home,
            };
            if let Some(v) = file.root.get("sandbox") {
                out.merge(&file.path, v, &anchors)?;
            }
            if let Some(Value::Object(p)) = file.root.get("permissions") {
                out.merge_rules(p, &anchors);
            }
        }
        if !out.enabled {
            out.warnings.clear();
        }
        Ok(out)
    }

    /// Merges one file's `sandbox` object.
    pub(crate) fn merge(
        &mut self,
        file: &Path,
        v: &Value,
        anchors: &Anchors<'_>,
    ) -> Result<(), SettingsError> {
        let Value::Object(map) = v else {
            return Err(key_err(file, "sandbox", "expected an object", v));
        };
        // Unknown keys are reported with every other unknown key (`settings::KNOWN_KEYS`).
        for (key, slot) in [
            ("enabled", &mut self.enabled),
            ("failIfUnavailable", &mut self.fail_if_unavailable),
            ("autoAllowBashIfSandboxed", &mut self.auto_allow),
            ("allowUnsandboxedCommands", &mut self.allow_unsandboxed),
        ] {
            if let Some(val) = map.get(key) {
                *slot = flag(file, &format!("sandbox.{key}"), val)?;
            }
        }
        if let Some(val) = map.get("excludedCommands") {
            self.excluded
                .extend(strings(file, "sandbox.excludedCommands", val)?);
        }
        if let Some(fs) = map.get("filesystem") {
            self.merge_filesystem(file, fs, anchors)?;
        }
        if let Some(net) = map.get("network") {
            self.merge_network(file, net)?;
        }
        Ok(())
    }

    fn merge_filesystem(
        &mut self,
        file: &Path,
        v: &Value,
        anchors: &Anchors<'_>,
    ) -> Result<(), SettingsError> {
        let Value::Object(map) = v else {
            return Err(key_err(file, "sandbox.filesystem", "expected an object", v));
        };
        for (key, list) in [
            ("allowWrite", &mut self.allow_write),
            ("denyWrite", &mut self.deny_write),
            ("denyRead", &mut self.deny_read),
            ("allowRead", &mut self.allow_read),
        ] {
            let Some(val) = map.get(key) else { continue };
            let name = format!("sandbox.filesystem.{key}");
            for (i, text) in strings(file, &name, val)?.iter().enumerate() {
                if text.is_empty() || text.contains(['*', '?', '[']) {
                    return Err(SettingsError::Key {
                        file: file.to_path_buf(),
                        key: format!("{name}[{i}]"),
                        expected: format!(
                            "a path without glob characters (the kernel boundary holds paths, \
                             not patterns), got {text:?}"
                        ),
                    });
                }
                list.push(anchor(text, anchors));
            }
        }
        Ok(())
    }

    fn merge_network(&mut self, file: &Path, v: &Value) -> Result<(), SettingsError> {
        let Value::Object(map) = v else {
            return Err(key_err(file, "sandbox.network", "expected an object", v));
        };
        for (key, list) in [
            ("allowedDomains", &mut self.allowed_domains),
            ("deniedDomains", &mut self.denied_domains),
        ] {
            if let Some(val) = map.get(key) {
                list.extend(strings(file, &format!("sandbox.network.{key}"), val)?);
            }
        }
        for (key, slot) in [
            ("allowLocalBinding", &mut self.allow_local_binding),
            ("allowAllUnixSockets", &mut self.allow_all_unix_sockets),
        ] {
            if let Some(val) = map.get(key) {
                *slot = flag(file, &format!("sandbox.network.{key}"), val)?;
            }
        }
        Ok(())
    }

    /// `Edit(…)` allow rules add writable paths, `Edit(…)` deny rules unwritable ones and
    /// `Read(…)` deny rules unreadable ones. Rule errors are the permission stage's to report.
    fn merge_rules(&mut self, permissions: &Map<String, Value>, anchors: &Anchors<'_>) {
        for (list, is_allow) in [("allow", true), ("deny", false)] {
            let Some(Value::Array(rules)) = permissions.get(list) else {
                continue;
            };
            for text in rules.iter().filter_map(Value::as_str) {
                let Ok(rule) = Rule::parse(text) else {
                    continue;
                };
                let Some(spec) = rule.specifier() else {
                    continue;
                };
                // The proxy lets through what WebFetch may fetch, and refuses what it may not.
                if rule.tool() == "WebFetch" {
                    if let Some(host) = spec.strip_prefix("domain:") {
                        let list = if is_allow {
                            &mut self.allowed_domains
                        } else {
                            &mut self.denied_domains
                        };
                        list.push(host.to_string());
                    }
                    continue;
                }
                let edit = EDIT_TOOLS.contains(&rule.tool());
                let read = READ_TOOLS.contains(&rule.tool());
                if !(edit || (read && !is_allow)) {
                    continue;
                }
                match rule_path(spec, anchors) {
                    Some(path) if is_allow => self.allow_write.push(path),
                    Some(path) if edit => self.deny_write.push(path),
                    Some(path) => self.deny_read.push(path),
                    None if is_allow => self.warnings.push(format!(
                        "sandbox: the allow rule {text} is a pattern, not a path: it adds no \
                         writable path to the sandbox"
                    )),
                    None => {
                        self.warnings.push(format!(
                            "sandbox: the deny rule {text} is a pattern the kernel boundary \
                             cannot hold, so no Bash command is auto-allowed for running \
                             sandboxed (autoAllowBashIfSandboxed is off)"
                        ));
                        self.unenforced.push(text.to_string());
                    }
                }
            }
        }
    }
}

/// The path a rule's specifier names, if it is one: glob-free, or a folder with `/**`.
fn rule_path(spec: &str, anchors: &Anchors<'_>) -> Option<PathBuf> {
    let literal = spec.strip_suffix("/**").unwrap_or(spec);
    if literal.is_empty() || literal.contains(['*', '?', '[', '{']) {
        return None;
    }
    Some(anchor(literal, anchors))
}

/// An absolute path: `//x` is `/x`, `~/x` in the home folder, `/x` in the settings file's
/// folder, `./x` and `x` in the working directory.
pub(crate) fn anchor(text: &str, a: &Anchors<'_>) -> PathBuf {
    let (base, rest) = if let Some(r) = text.strip_prefix("//") {
        (Path::new("/"), r)
    } else if text == "~" {
        (a.home, "")
    } else if let Some(r) = text.strip_prefix("~/") {
        (a.home, r)
    } else if let Some(r) = text.strip_prefix('/') {
        (a.settings_dir, r)
    } else if let Some(r) = text.strip_prefix("./") {
        (a.cwd, r)
    } else {
        (a.cwd, text)
    };
    normalize(&base.join(rest))
}

fn flag(file: &Path, key: &str, v: &Value) -> Result<bool, SettingsError> {
    v.as_bool()
        .ok_or_else(|| key_err(file, key, "expected true or false", v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(files: &[(&str, &str)]) -> Result<SandboxSettings, String> {
        let mut settings = Settings::default();
        for (path, text) in files {
            settings
                .merge_text(Path::new(path), text)
                .map_err(|e| e.to_string())?;
        }
        SandboxSettings::load(&settings, Path::new("/w"), Path::new("/h"))
            .map_err(|e| e.to_string())
    }

    fn paths(v: &[PathBuf]) -> Vec<&str> {
        v.iter().map(|p| p.to_str().unwrap()).collect()
    }

    #[test]
    fn anchors_table() {
        let a = Anchors {
            settings_dir: Path::new("/cfg"),
            cwd: Path::new("/w"),
            home: Path::new("/h"),
        };
        for (text, want) in [
            ("//etc/x", "/etc/x"),
            ("~/.ssh", "/h/.ssh"),
            ("~", "/h"),
            ("/out", "/cfg/out"),
            ("./build", "/w/build"),
            ("build/../dist", "/w/dist"),
            ("//tmp/a/", "/tmp/a"),
        ] {
            assert_eq!(anchor(text, &a), Path::new(want), "{text}");
        }
    }

    #[test]
    fn defaults_and_later_scalars_win() {
        let s = load(&[("/p/a.json", r#"{"sandbox": {"enabled": true}}"#)]).unwrap();
        assert!(s.enabled && s.auto_allow && s.allow_unsandboxed && !s.fail_if_unavailable);
        let s = load(&[
            (
                "/p/a.json",
                r#"{"sandbox": {"enabled": true, "autoAllowBashIfSandboxed": false}}"#,
            ),
            (
                "/p/b.json",
                r#"{"sandbox": {"enabled": false, "failIfUnavailable": true}}"#,
            ),
        ])
        .unwrap();
        assert!(!s.enabled && !s.auto_allow && s.fail_if_unavailable);
        assert_eq!(load(&[]).unwrap(), SandboxSettings::new());
    }

    #[test]
    fn lists_merge_across_files_with_their_anchors() {
        let s = load(&[
            (
                "/p/a.json",
                r#"{"sandbox": {"enabled": true, "excludedCommands": ["docker"],
                    "filesystem": {"allowWrite": ["/out", "~/.cache"], "denyRead": ["//etc/secret"], "allowRead": ["//etc/secret/ok"]},
                    "network": {"allowedDomains": ["*.example.com"], "allowLocalBinding": true}}}"#,
            ),
            (
                "/q/b.json",
                r#"{"sandbox": {"excludedCommands": ["git *"],
                    "filesystem": {"allowWrite": ["./build"], "denyWrite": ["/x"]},
                    "network": {"deniedDomains": ["evil.test"]}},
                    "permissions": {"allow": ["Edit(//srv/**)", "Edit(src/*.rs)", "Bash(ls)", "WebFetch(domain:docs.rs)"],
                                    "deny": ["Edit(./.env)", "Read(~/.aws/**)", "Read(**/*.key)", "WebFetch(domain:*.bad.test)"]}}"#,
            ),
        ])
        .unwrap();
        assert_eq!(s.excluded, ["docker", "git *"]);
        assert_eq!(
            paths(&s.allow_write),
            ["/p/out", "/h/.cache", "/w/build", "/srv"]
        );
        assert_eq!(paths(&s.deny_write), ["/q/x", "/w/.env"]);
        assert_eq!(paths(&s.deny_read), ["/etc/secret", "/h/.aws"]);
        assert_eq!(s.allowed_domains, ["*.example.com", "docs.rs"]);
        assert_eq!(s.denied_domains, ["evil.test", "*.bad.test"]);
        assert!(s.allow_local_binding && !s.allow_all_unix_sockets);
        assert_eq!(s.unenforced, ["Read(**/*.key)"]);
        for needle in ["Edit(src/*.rs) is a pattern", "Read(**/*.key) is a pattern"] {
            assert!(
                s.warnings.iter().any(|w| w.contains(needle)),
                "{needle}: {:#?}",
                s.warnings
            );
        }
    }

    #[test]
    fn wrong_types_name_the_key() {
        for (text, needle) in [
            (
                r#"{"sandbox": 1}"#,
                "sandbox: expected an object, got integer",
            ),
            (
                r#"{"sandbox": {"enabled": "yes"}}"#,
                "sandbox.enabled: expected true or false, got string",
            ),
            (
                r#"{"sandbox": {"excludedCommands": "git"}}"#,
                "sandbox.excludedCommands: expected an array of strings",
            ),
            (
                r#"{"sandbox": {"filesystem": []}}"#,
                "sandbox.filesystem: expected an object",
            ),
            (
                r#"{"sandbox": {"filesystem": {"denyRead": [3]}}}"#,
                "sandbox.filesystem.denyRead[0]: expected a string, got integer",
            ),
            (
                r#"{"sandbox": {"filesystem": {"denyWrite": ["src/*.rs"]}}}"#,
                "sandbox.filesystem.denyWrite[0]: a path without glob characters",
            ),
            (
                r#"{"sandbox": {"network": {"allowLocalBinding": 1}}}"#,
                "sandbox.network.allowLocalBinding: expected true or false",
            ),
            (
                r#"{"sandbox": {"network": {"allowedDomains": {}}}}"#,
                "sandbox.network.allowedDomains: expected an array",
            ),
        ] {
            let err = load(&[("/p/s.json", text)]).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
            assert!(err.starts_with("/p/s.json: "), "{err}");
        }
    }

    #[test]
    fn unknown_sandbox_keys_warn() {
        let mut settings = Settings::default();
        settings
            .merge_text(
                Path::new("/p/s.json"),
                r#"{"sandbox": {"enabeld": true, "filesystem": {"denyReed": []}, "network": {"x": 1}}}"#,
            )
            .unwrap();
        for key in [
            "sandbox.enabeld",
            "sandbox.filesystem.denyReed",
            "sandbox.network.x",
        ] {
            assert!(
                settings
                    .warnings
                    .iter()
                    .any(|w| w.contains(&format!("{key:?}"))),
                "{key}: {:#?}",
                settings.warnings
            );
        }
    }
}
