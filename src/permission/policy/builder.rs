//! Collecting settings files and flags into a [`Policy`]: rules parsed and anchored where
//! they were written, modes, directories; [`PolicyBuilder::build`] compiles them once.

use super::*;

/// A configuration error: a rule or a settings value that is wrong. Display names the file and
/// key, e.g. `settings.json: permissions.allow[2]: unbalanced parentheses in rule "Bash(ls"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// A malformed rule.
    #[error("{origin}: {source}")]
    Rule {
        /// `file: permissions.allow[2]` or the command-line flag.
        origin: String,
        /// What is wrong with the rule.
        source: RuleError,
    },
    /// A settings value of the wrong type or an unknown value.
    #[error("{file}: {key}: {message}")]
    Settings {
        /// The settings file.
        file: String,
        /// The key path, e.g. `permissions.defaultMode`.
        key: String,
        /// What was wrong.
        message: String,
    },
}

#[derive(Debug)]
struct Pending {
    kind: RuleKind,
    rule: Rule,
    source: String,
    settings_dir: PathBuf,
    origin: String,
}

/// Collects settings and flags; [`PolicyBuilder::build`] compiles them once.
#[derive(Debug)]
pub(crate) struct PolicyBuilder {
    cwd: PathBuf,
    home: PathBuf,
    pending: Vec<Pending>,
    dirs: Vec<PathBuf>,
    default_mode: Option<Mode>,
    cli_mode: Option<Mode>,
    /// `permissions.disableBypassPermissionsMode: "disable"`, and the file that said so.
    bypass_disabled: Option<String>,
    warnings: Vec<String>,
    output_dir: Option<PathBuf>,
    sandbox: Option<std::sync::Arc<dyn crate::session::ShellSandbox>>,
}

impl PolicyBuilder {
    /// A builder for a session rooted at `cwd` with home directory `home`.
    pub(crate) fn new(cwd: PathBuf, home: PathBuf) -> Self {
        let cwd = crate::paths::normalize(&cwd);
        let home = crate::paths::normalize(&home);
        PolicyBuilder {
            cwd,
            home,
            pending: Vec::new(),
            dirs: Vec::new(),
            default_mode: None,
            cli_mode: None,
            bypass_disabled: None,
            warnings: Vec::new(),
            output_dir: None,
            sandbox: None,
        }
    }

    /// The Bash sandbox: a Bash call it runs sandboxed and that no deny or ask rule matches is
    /// allowed (`sandbox.autoAllowBashIfSandboxed`).
    pub(crate) fn set_sandbox(
        &mut self,
        sandbox: std::sync::Arc<dyn crate::session::ShellSandbox>,
    ) {
        self.sandbox = Some(sandbox);
    }

    /// Adds the value of the `permissions` key of one settings file. Rule lists pool across
    /// files; for `defaultMode` the later file wins.
    pub(crate) fn add_settings_file(
        &mut self,
        file: &Path,
        permissions: &Value,
    ) -> Result<(), PolicyError> {
        let fname = file.display().to_string();
        let err = |key: &str, message: &str| PolicyError::Settings {
            file: fname.clone(),
            key: key.to_string(),
            message: message.to_string(),
        };
        let Some(obj) = permissions.as_object() else {
            return Err(err("permissions", "expected an object"));
        };
        let abs_file = absolutize(&file.to_string_lossy(), &self.cwd, &self.home);
        let settings_dir = abs_file
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("/"));
        for (key, value) in obj {
            let kpath = format!("permissions.{key}");
            match key.as_str() {
                "allow" | "ask" | "deny" => {
                    let kind = match key.as_str() {
                        "allow" => RuleKind::Allow,
                        "ask" => RuleKind::Ask,
                        _ => RuleKind::Deny,
                    };
                    let Some(items) = value.as_array() else {
                        return Err(err(&kpath, "expected an array of rule strings"));
                    };
                    for (i, item) in items.iter().enumerate() {
                        let ipath = format!("{kpath}[{i}]");
                        let Some(text) = item.as_str() else {
                            return Err(err(&ipath, "expected a string"));
                        };
                        // `// …` entries are comments: the reference CLI accepts them, and the
                        // other rules of the list still apply.
                        if text.trim_start().starts_with("//") {
                            continue;
                        }
                        let origin = format!("{fname}: {ipath}");
                        self.push(kind, text, fname.clone(), settings_dir.clone(), origin)?;
                    }
                }
                "additionalDirectories" => {
                    let Some(items) = value.as_array() else {
                        return Err(err(&kpath, "expected an array of directory strings"));
                    };
                    for (i, item) in items.iter().enumerate() {
                        let Some(d) = item.as_str() else {
                            return Err(err(&format!("{kpath}[{i}]"), "expected a string"));
                        };
                        self.add_directory(d);
                    }
                }
                "defaultMode" => {
                    let Some(m) = value.as_str() else {
                        return Err(err(&kpath, "expected a string"));
                    };
                    self.default_mode =
                        Some(m.parse::<Mode>().map_err(|e| err(&kpath, &e.to_string()))?);
                }
                "disableBypassPermissionsMode" => match value.as_str() {
                    Some("disable") => self.bypass_disabled = Some(fname.clone()),
                    _ => return Err(err(&kpath, "expected \"disable\"")),
                },
                // Unknown keys are reported once, with a likely key, by `settings`.
                _ => {}
            }
        }
        Ok(())
    }

    /// Adds `--allowed-tools` rules (several may be separated by commas or spaces outside
    /// parentheses).
    pub(crate) fn add_cli_allow(&mut self, rules: &str) -> Result<(), PolicyError> {
        self.add_cli(RuleKind::Allow, rules, "--allowed-tools")
    }

    /// Adds `--disallowed-tools` rules.
    pub(crate) fn add_cli_deny(&mut self, rules: &str) -> Result<(), PolicyError> {
        self.add_cli(RuleKind::Deny, rules, "--disallowed-tools")
    }

    fn add_cli(&mut self, kind: RuleKind, rules: &str, flag: &str) -> Result<(), PolicyError> {
        let texts = super::super::rule::split_rule_list(rules);
        if texts.is_empty() {
            // A flag that holds no rule is the same error as `""` in a settings file.
            let cwd = self.cwd.clone();
            return self.push(kind, "", "command line".into(), cwd, flag.to_string());
        }
        for text in texts {
            let cwd = self.cwd.clone();
            self.push(kind, text, "command line".into(), cwd, flag.to_string())?;
        }
        Ok(())
    }

    /// `--permission-mode`: wins over every `defaultMode`.
    pub(crate) fn set_cli_mode(&mut self, mode: Mode) {
        self.cli_mode = Some(mode);
    }

    /// Adds a workspace directory (`~` is home, relative is against the cwd).
    pub(crate) fn add_directory(&mut self, dir: &str) {
        self.dirs.push(absolutize(dir, &self.cwd, &self.home));
    }

    /// toolrt's own output folder for this session: Read, Glob and Grep inside it need no rule
    /// (deny and ask rules still apply), except in its `checkpoints` folder, which holds prior
    /// contents of changed files.
    pub(crate) fn add_output_dir(&mut self, dir: &Path) {
        self.output_dir = Some(crate::paths::normalize(dir));
    }

    /// Warnings collected so far (rules toolrt can only partly honour), for stderr.
    pub(crate) fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The starting mode: the flag, else the last `defaultMode`, else `default`; bypass taken
    /// away (with a notice) when a settings file disables it.
    fn starting_mode(&self, notices: &mut Vec<String>) -> Mode {
        let mode = self.cli_mode.or(self.default_mode).unwrap_or_default();
        match &self.bypass_disabled {
            Some(file) if mode == Mode::BypassPermissions => {
                notices.push(format!(
                    "{file}: permissions.disableBypassPermissionsMode: bypassPermissions is \
                     disabled; running in default mode (calls that need approval ask)"
                ));
                Mode::Default
            }
            _ => mode,
        }
    }

    fn push(
        &mut self,
        kind: RuleKind,
        text: &str,
        source: String,
        settings_dir: PathBuf,
        origin: String,
    ) -> Result<(), PolicyError> {
        let rule = Rule::parse(text).map_err(|source| PolicyError::Rule {
            origin: origin.clone(),
            source,
        })?;
        let tool = rule.tool();
        if kind == RuleKind::Allow && tool.contains('*') {
            let ok = tool
                .strip_prefix("mcp__")
                .and_then(|r| r.split_once("__"))
                .is_some_and(|(server, _)| !server.is_empty() && !server.contains('*'));
            if !ok {
                return Err(PolicyError::Rule {
                    origin,
                    source: RuleError::McpAllowGlob(text.to_string()),
                });
            }
        }
        if kind == RuleKind::Allow && !rule.specifier_is_checked() {
            self.warnings.push(format!(
                "{origin}: toolrt cannot check the specifier of {text:?}, so this allow rule \
                 approves nothing (deny and ask rules of this kind cover every {} call)",
                rule.tool()
            ));
        }
        self.pending.push(Pending {
            kind,
            rule,
            source,
            settings_dir,
            origin,
        });
        Ok(())
    }

    /// Compiles every rule once and indexes them by tool.
    pub(crate) fn build(self) -> Result<Policy, PolicyError> {
        let mut notices = Vec::new();
        let mode = self.starting_mode(&mut notices);
        let mut rules = Vec::with_capacity(self.pending.len());
        let mut lists = [List::default(), List::default(), List::default()];
        let mut origins = Vec::new();
        for p in &self.pending {
            let idx = rules.len();
            rules.push(RuleInfo {
                text: p.rule.to_string(),
                source: p.source.clone(),
                kind: p.kind,
            });
            origins.push(p.origin.clone());
            let list = &mut lists[p.kind as usize];
            let anchors = Anchors {
                settings_dir: &p.settings_dir,
                cwd: &self.cwd,
                home: &self.home,
            };
            list.add(&p.rule, idx, &anchors, p.kind == RuleKind::Allow);
        }
        for list in &mut lists {
            list.build().map_err(|(idx, why)| PolicyError::Rule {
                origin: origins[idx].clone(),
                source: RuleError::InvalidSpecifier {
                    rule: rules[idx].text.clone(),
                    why,
                },
            })?;
        }
        let [allow, ask, deny] = lists;
        let mut workspace = vec![self.cwd.clone()];
        workspace.extend(self.dirs.iter().cloned());
        let mut roots = workspace.clone();
        for w in &workspace {
            if let Ok(c) = std::fs::canonicalize(w)
                && !roots.contains(&c)
            {
                roots.push(c);
            }
        }
        let (output_roots, checkpoint_roots) = match &self.output_dir {
            Some(dir) => (candidates(dir), candidates(&dir.join("checkpoints"))),
            None => (Vec::new(), Vec::new()),
        };
        let git_env = crate::shell::gitconfig::GitEnv::from_process(&self.home);
        let mut policy = Policy {
            output_roots,
            checkpoint_roots,
            mode,
            notices,
            cwd: self.cwd,
            home: self.home,
            workspace,
            roots,
            rules,
            allow,
            ask,
            deny,
            git_env,
            flags: Default::default(),
            git_checks: Default::default(),
            sandbox: self.sandbox,
        };
        policy.flags = policy.rule_flags();
        Ok(policy)
    }
}
