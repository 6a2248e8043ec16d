//! §1 and §2: settings, their errors, disabling bypass; selection is not permission.

use super::*;

#[test]
fn s1_settings() {
    // pooled rule lists: a deny anywhere wins
    let mut b = PolicyBuilder::new(PathBuf::from(CWD), PathBuf::from(HOME));
    b.add_settings_file(
        Path::new("/a/settings.json"),
        &json!({"allow": ["Bash(rm *)"], "defaultMode": "plan"}),
    )
    .unwrap();
    b.add_settings_file(
        Path::new("/b/settings.json"),
        &json!({"deny": ["Bash(rm *)"], "defaultMode": "acceptEdits"}),
    )
    .unwrap();
    let p = b.build().unwrap();
    assert_eq!(p.starting_mode(), AE, "later file wins for scalars");
    assert_eq!(decide(&p, DF, "Bash", bash("rm x")).behavior, D);
    let d = decide(&p, DF, "Bash", bash("rm x"));
    assert!(
        d.message("Bash").contains("/b/settings.json"),
        "{}",
        d.message("Bash")
    );
    assert!(d.message("Bash").contains("Bash(rm *)"));
    assert!(
        !d.message("Bash").contains("rm x"),
        "never echo the command"
    );

    // CLI flags are the highest-precedence source
    let mut b = PolicyBuilder::new(PathBuf::from(CWD), PathBuf::from(HOME));
    b.add_settings_file(Path::new("/a/s.json"), &json!({"defaultMode": "plan"}))
        .unwrap();
    b.set_cli_mode(BP);
    b.add_cli_allow("Bash(git log:*) Read,Edit(src/**)")
        .unwrap();
    b.add_cli_deny("Bash(curl *)").unwrap();
    let p = b.build().unwrap();
    assert_eq!(p.starting_mode(), BP);
    assert_eq!(decide(&p, DF, "Bash", bash("git log -1")).behavior, A);
    assert_eq!(decide(&p, DF, "Edit", file("/w/proj/src/a")).behavior, A);
    let d = decide(&p, DF, "Bash", bash("curl x"));
    assert_eq!(d.behavior, D);
    assert!(d.message("Bash").contains("command line"));

    // starting mode default
    let p = PolicyBuilder::new(PathBuf::from(CWD), PathBuf::from(HOME))
        .build()
        .unwrap();
    assert_eq!(p.starting_mode(), DF);
    assert_eq!(p.workspace(), &[PathBuf::from(CWD)]);

    // modes by wire name
    for (s, m) in [
        ("default", DF),
        ("acceptEdits", AE),
        ("plan", PL),
        ("dontAsk", DA),
        ("bypassPermissions", BP),
    ] {
        assert_eq!(s.parse::<Mode>().unwrap(), m);
        assert_eq!(m.to_string(), s);
    }
    assert!("bypass".parse::<Mode>().is_err());
}

#[test]
fn s1_settings_errors() {
    let err = |v: Value| {
        let mut b = PolicyBuilder::new(PathBuf::from(CWD), PathBuf::from(HOME));
        b.add_settings_file(Path::new("settings.json"), &v)
            .and_then(|_| b.build().map(|_| ()))
            .unwrap_err()
            .to_string()
    };
    for (v, want) in [
        (json!({"allow": ["Read", "Edit", "Bash(ls"]}), "settings.json: permissions.allow[2]: unbalanced parentheses in rule \"Bash(ls\""),
        (json!({"deny": ["(x)"]}), "settings.json: permissions.deny[0]: empty tool name in rule \"(x)\""),
        (json!({"ask": ["mcp__a__b(x)"]}), "settings.json: permissions.ask[0]: tool mcp__a__b takes no specifier, in rule \"mcp__a__b(x)\""),
        (json!({"disableBypassPermissionsMode": true}), "settings.json: permissions.disableBypassPermissionsMode: expected \"disable\""),
        (json!({"disableBypassPermissionsMode": "yes"}), "settings.json: permissions.disableBypassPermissionsMode: expected \"disable\""),
        (json!({"allow": ["mcp__*"]}), "settings.json: permissions.allow[0]: allow rules may use * in an MCP tool name only after mcp__<server>__, in rule \"mcp__*\""),
        (json!({"allow": "Bash"}), "settings.json: permissions.allow: expected an array of rule strings"),
        (json!({"allow": [3]}), "settings.json: permissions.allow[0]: expected a string"),
        (json!({"defaultMode": "yolo"}), "settings.json: permissions.defaultMode: unknown permission mode \"yolo\" (expected default, acceptEdits, plan, dontAsk or bypassPermissions)"),
        (json!({"defaultMode": 1}), "settings.json: permissions.defaultMode: expected a string"),
        (json!({"additionalDirectories": "x"}), "settings.json: permissions.additionalDirectories: expected an array of directory strings"),
        (json!([]), "settings.json: permissions: expected an object"),
        (json!({"deny": ["Read({a)"]}), "settings.json: permissions.deny[0]: invalid specifier in rule \"Read({a)\": unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)"),
    ] {
        assert_eq!(err(v), want);
    }
    let mut b = PolicyBuilder::new(PathBuf::from(CWD), PathBuf::from(HOME));
    assert_eq!(
        b.add_cli_allow("Bash(ls").unwrap_err().to_string(),
        "--allowed-tools: unbalanced parentheses in rule \"Bash(ls\""
    );
    // Unknown keys are the settings loader's to report (once, with a likely key).
    b.add_settings_file(Path::new("s.json"), &json!({"frobnicate": 1}))
        .unwrap();
    assert!(b.warnings().is_empty());
}

#[test]
fn s1_disable_bypass_permissions_mode() {
    // From the flag or from defaultMode, bypass is taken away: default mode, with a warning.
    for cli in [true, false] {
        let mut b = PolicyBuilder::new(PathBuf::from(CWD), PathBuf::from(HOME));
        let mut s = json!({"disableBypassPermissionsMode": "disable"});
        if cli {
            b.set_cli_mode(BP);
        } else {
            s["defaultMode"] = json!("bypassPermissions");
        }
        b.add_settings_file(Path::new("/a/s.json"), &s).unwrap();
        let p = b.build().unwrap();
        assert_eq!(p.starting_mode(), DF, "cli flag: {cli}");
        assert_eq!(p.notices().len(), 1);
        assert!(p.notices()[0].contains("bypassPermissions is disabled"), "{:?}", p.notices());
    }
    // Other modes are untouched and nothing is said.
    let mut b = PolicyBuilder::new(PathBuf::from(CWD), PathBuf::from(HOME));
    b.add_settings_file(Path::new("/a/s.json"), &json!({"disableBypassPermissionsMode": "disable"}))
        .unwrap();
    b.set_cli_mode(AE);
    let p = b.build().unwrap();
    assert_eq!(p.starting_mode(), AE);
    assert!(p.notices().is_empty());
}

#[test]
fn s3_selection_is_not_permission() {
    // --allowed-tools only adds allow rules: it never makes a denied or removed tool appear.
    let mut b = PolicyBuilder::new(PathBuf::from(CWD), PathBuf::from(HOME));
    b.add_cli_allow("Bash").unwrap();
    b.add_cli_deny("Bash").unwrap();
    let p = b.build().unwrap();
    assert!(p.removes_tool("Bash"));
    assert_eq!(decide(&p, DF, "Bash", bash("ls")).behavior, D);
}
