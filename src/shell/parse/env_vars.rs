//! Variables whose value a program reads as options or configuration, not as a command line,
//! and that can make it run code (`TAR_OPTIONS='--to-command=…'`, `npm_config_script_shell`,
//! `GIT_CONFIG_GLOBAL=FILE`, `RUSTFLAGS='-C linker=…'`, `LD_PRELOAD`), or choose a file it
//! writes (`SIMPLE_BACKUP_SUFFIX`). Deny and ask rules cannot be checked against what such a
//! value makes a program do: code toolrt cannot see.

/// Single variables, and what their value is.
const NAMED: &[(&str, &str)] = &[
    ("GIT_CONFIG_PARAMETERS", "git configuration"),
    ("GIT_CONFIG_COUNT", "git configuration"),
    ("GIT_CONFIG_GLOBAL", "a git configuration file"),
    ("GIT_CONFIG_SYSTEM", "a git configuration file"),
    ("GIT_CONFIG", "a git configuration file"),
    (
        "GIT_DIR",
        "the git directory, whose configuration and hooks git runs",
    ),
    (
        "GIT_COMMON_DIR",
        "the git directory, whose configuration and hooks git runs",
    ),
    ("GIT_EXEC_PATH", "the folder git runs its subcommands from"),
    (
        "GIT_TEMPLATE_DIR",
        "the hooks and configuration a new repository gets",
    ),
    ("TAR_OPTIONS", "tar options"),
    ("LESSOPEN", "less's input filter"),
    ("LESSCLOSE", "less's input filter"),
    ("LESS", "less options"),
    ("MANOPT", "man options"),
    ("FZF_DEFAULT_OPTS", "fzf options"),
    ("RIPGREP_CONFIG_PATH", "rg's options file"),
    ("PARALLEL", "GNU parallel options"),
    ("NODE_OPTIONS", "interpreter options"),
    ("PERL5OPT", "interpreter options"),
    ("RUBYOPT", "interpreter options"),
    ("JAVA_TOOL_OPTIONS", "interpreter options"),
    ("_JAVA_OPTIONS", "interpreter options"),
    ("RUSTFLAGS", "compiler options (a linker it runs)"),
    ("RUSTDOCFLAGS", "compiler options (a linker it runs)"),
    ("RUSTUP_TOOLCHAIN", "the toolchain whose programs run"),
    ("RUSTUP_HOME", "the toolchains whose programs run"),
    ("UV_CONFIG_FILE", "a uv configuration file"),
    ("CONDARC", "a conda configuration file"),
    ("HOME", "where programs find their configuration files"),
    (
        "XDG_CONFIG_HOME",
        "where programs find their configuration files",
    ),
    ("PATH", "where programs are found"),
    ("LD_PRELOAD", "libraries every program loads"),
    ("LD_AUDIT", "libraries every program loads"),
    ("LD_LIBRARY_PATH", "where programs find their libraries"),
    ("BASH_ENV", "a file of commands bash runs first"),
    ("ENV", "a file of commands sh runs first"),
];

/// Families of variables a package manager reads as its configuration (any setting, a
/// configuration file or a command among them), with the few settings that run nothing.
const FAMILIES: &[(&str, &str, &[&str])] = &[
    (
        "npm_config_",
        "npm configuration (a shell for scripts, node options, a configuration file)",
        &[
            "registry",
            "loglevel",
            "fund",
            "audit",
            "update_notifier",
            "progress",
            "color",
            "yes",
        ],
    ),
    (
        "yarn_",
        "yarn configuration (its yarnPath runs any script)",
        &[],
    ),
    (
        "pip_",
        "pip configuration",
        &[
            "index_url",
            "extra_index_url",
            "no_cache_dir",
            "disable_pip_version_check",
            "no_input",
            "quiet",
            "progress_bar",
            "default_timeout",
            "trusted_host",
        ],
    ),
    (
        "cargo_",
        "cargo configuration (runners, wrappers, linkers, a configuration folder)",
        &[
            "term_color",
            "term_verbose",
            "term_quiet",
            "term_progress_when",
            "incremental",
            "build_jobs",
            "target_dir",
            "net_offline",
            "net_retry",
            "log",
        ],
    ),
    ("git_config_key_", "git configuration", &[]),
    ("git_config_value_", "git configuration", &[]),
];

/// Why setting `name` makes a command run code toolrt cannot see (or write a file it cannot
/// name); `None` for other variables.
pub(super) fn hidden_by(name: &str) -> Option<String> {
    if let Some((_, what)) = NAMED.iter().find(|(n, _)| *n == name) {
        return Some(format!(
            "{name} holds {what}, which can run commands toolrt does not read"
        ));
    }
    if name == "SIMPLE_BACKUP_SUFFIX" {
        return Some(format!(
            "{name} names the backup files cp, mv, ln and install write, which toolrt does not check"
        ));
    }
    // npm reads its variables in any case (`NPM_CONFIG_X`, `npm_config_x`); the others only
    // in upper case.
    let lower = name.to_ascii_lowercase();
    for (prefix, what, inert) in FAMILIES {
        let any_case = *prefix == "npm_config_";
        if (any_case || name.starts_with(|c: char| c.is_ascii_uppercase()))
            && let Some(rest) = lower.strip_prefix(prefix)
            && !inert.contains(&rest)
            && !(prefix == &"cargo_" && rest.starts_with("term_"))
        {
            return Some(format!(
                "{name} holds {what}, which can run commands toolrt does not read"
            ));
        }
    }
    None
}
