use super::*;

fn run_args(args: &[&str]) -> Result<RunArgs, clap::Error> {
    let cli = Cli::try_parse_from(["cronscaler", "run"].iter().chain(args))?;
    match cli.command {
        Command::Run(run) => Ok(*run),
        other => panic!("parsed as {other:?}"),
    }
}

/// Every command's flags are well formed: no two share a name (clap panics at parse time
/// otherwise, for whoever runs that command; seen with `status --controller-namespace`).
#[test]
fn every_command_line_is_well_formed() {
    use clap::CommandFactory as _;
    Cli::command().debug_assert();
}

#[test]
fn run_defaults_match_the_documented_ones() {
    let run = run_args(&[]).unwrap();
    assert_eq!(run.workers, 2);
    assert_eq!(run.namespace, None);
    assert_eq!(run.kube_qps, 50.0);
    assert_eq!(run.kube_burst, 100);
    assert_eq!(run.default_timezone.zone, Tz::UTC);
    assert!(!run.dry_run);
    assert!(!run.leader_elect);
    assert_eq!(run.lease.name, "cronscaler");
    assert_eq!(run.http_addr, "0.0.0.0:8080".parse().unwrap());
    assert_eq!(run.log_format, LogFormat::Text);
}

#[test]
fn flags_override_defaults() {
    let run = run_args(&[
        "--workers",
        "8",
        "--namespace",
        "staging",
        "--kube-qps",
        "5.5",
        "--kube-burst",
        "10",
    ])
    .unwrap();
    assert_eq!(run.workers, 8);
    assert_eq!(run.namespace.as_deref(), Some("staging"));
    assert_eq!(run.kube_qps, 5.5);
    assert_eq!(run.kube_burst, 10);
}

#[test]
fn every_duration_flag_refuses_more_than_its_maximum_naming_the_flag() {
    let runs = [
        ("--wake-cooldown", "1d"),
        ("--max-override", "366d"),
        ("--grace-period", "1d"),
        ("--warm-up", "1h"),
        ("--wake-step-timeout", "1d"),
    ];
    for (flag, most) in runs {
        assert!(run_args(&[flag, most]).is_ok(), "{flag} {most}");
        let error = run_args(&[flag, "1000000000d"]).unwrap_err().to_string();
        assert!(
            error.contains(flag) && error.contains(&format!("at most {most}")),
            "{error}"
        );
    }
    let wake = Cli::try_parse_from(["cronscaler", "wake", "-n", "a", "--for", "367d"])
        .unwrap_err()
        .to_string();
    assert!(
        wake.contains("--for") && wake.contains("at most 366d"),
        "{wake}"
    );
    let plan = Cli::try_parse_from(["cronscaler", "plan", "--for", "1000000000d"])
        .unwrap_err()
        .to_string();
    assert!(
        plan.contains("--for") && plan.contains("at most 366d"),
        "{plan}"
    );
}

#[test]
fn the_wake_up_backend_trusts_the_proxies_it_is_told_and_has_a_budget_and_a_service_of_its_own() {
    let run = run_args(&[]).unwrap();
    assert!(run.wake_trusted_proxies.is_empty());
    assert_eq!(run.wake_kube_qps(), 10.0, "a fifth of --kube-qps");
    let run = run_args(&[
        "--wake-trusted-proxies",
        "10.0.0.0/8,fd00::/8,192.168.1.7",
        "--wake-kube-qps",
        "3",
    ])
    .unwrap();
    assert_eq!(run.wake_trusted_proxies.len(), 3);
    assert_eq!(run.wake_kube_qps(), 3.0);
    assert_eq!(
        run.wake_service,
        WakeService {
            namespace: None,
            name: "cronscaler-wake".into()
        }
    );
    let elsewhere = run_args(&["--wake-service", "edge/wake"]).unwrap();
    assert_eq!(elsewhere.wake_service.namespace.as_deref(), Some("edge"));
    for wrong in ["Edge/wake", "a/b/c", "wake/", "wake-"] {
        let error = run_args(&["--wake-service", wrong])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("--wake-service") && error.contains(wrong),
            "{error}"
        );
    }
    let error = run_args(&["--wake-trusted-proxies", "10.0.0.0/33"])
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("--wake-trusted-proxies") && error.contains("10.0.0.0/33"),
        "{error}"
    );
}

proptest::proptest! {
    /// Any number of seconds up to a flag's maximum is taken as it is; one more is refused.
    #[test]
    fn a_duration_is_taken_up_to_its_maximum_and_no_further(seconds in 0u64..=2 * 86_400) {
        let taken = up_to_1d(&format!("{seconds}s"));
        if seconds <= 86_400 {
            proptest::prop_assert_eq!(taken, Ok(Duration::from_secs(seconds)));
        } else {
            proptest::prop_assert_eq!(taken, Err("at most 1d".to_string()));
        }
    }
}

#[test]
fn nonsense_budgets_are_refused_with_the_value() {
    let error = run_args(&["--kube-qps=-3"]).unwrap_err().to_string();
    assert!(error.contains("\"-3\" is not a positive number"), "{error}");
    assert!(run_args(&["--workers", "0"]).is_err());
    assert!(run_args(&["--kube-burst", "0"]).is_err());
    let error = run_args(&["--default-timezone", "Mars/Olympus"])
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("\"Mars/Olympus\" is not an IANA time zone name"),
        "{error}"
    );
}

#[test]
fn plan_reads_files_window_and_format() {
    let cli = Cli::try_parse_from([
        "cronscaler",
        "plan",
        "-f",
        "examples",
        "-f",
        "more.yaml",
        "--from",
        "2026-11-23T00:00:00Z",
        "--for",
        "36h",
        "-o",
        "json",
    ])
    .unwrap();
    let Command::Plan(plan) = cli.command else {
        panic!("not plan")
    };
    assert_eq!(
        plan.files,
        vec![PathBuf::from("examples"), PathBuf::from("more.yaml")]
    );
    assert_eq!(
        plan.from.map(|from| from.to_rfc3339()),
        Some("2026-11-23T00:00:00+00:00".into())
    );
    assert_eq!(plan.window, Duration::from_secs(36 * 3600));
    assert_eq!(plan.output, OutputFormat::Json);
}

#[test]
fn restore_takes_all_or_one_named_object() {
    let parse = |args: &[&str]| Cli::parse_args(["cronscaler", "restore"].iter().chain(args));
    let Command::Restore(one) = parse(&["-n", "staging", "web"]).unwrap().command else {
        panic!("not restore")
    };
    assert_eq!(
        (one.all, one.namespace.as_deref(), one.name.as_deref()),
        (false, Some("staging"), Some("web"))
    );
    assert!(parse(&["--all"]).is_ok());
    assert!(parse(&[]).is_err(), "nothing to restore named");
    assert!(parse(&["web"]).is_err(), "a name needs its namespace");
    assert!(
        !one.force,
        "checks for a running controller unless told not to"
    );
    assert_eq!(
        (one.lease.namespace, one.lease.name.as_str()),
        (None, "cronscaler")
    );
    let Command::Restore(forced) = parse(&[
        "--all",
        "--force",
        "--leader-elect-namespace",
        "ops",
        "--leader-elect-lease-name",
        "scaler",
    ])
    .unwrap()
    .command
    else {
        panic!("not restore")
    };
    assert!(forced.force);
    assert_eq!(
        (
            forced.lease.namespace.as_deref(),
            forced.lease.name.as_str()
        ),
        (Some("ops"), "scaler")
    );
}

#[test]
fn plan_defaults_to_a_week_as_a_table() {
    let Command::Plan(plan) = Cli::try_parse_from(["cronscaler", "plan"]).unwrap().command else {
        panic!("not plan")
    };
    assert!(plan.files.is_empty());
    assert_eq!(plan.window, Duration::from_secs(7 * 86400));
    assert_eq!(plan.output, OutputFormat::Table);
    assert_eq!(plan.prices.table, None);
}

#[test]
fn plan_prices_are_a_table_read_whole_or_refused_naming_the_entry() {
    let parse = |args: &[&str]| Cli::try_parse_from(["cronscaler", "plan"].iter().chain(args));
    let Command::Plan(plan) = parse(&["--prices", "cpu=0.04,memory=0.005,gpu=2.5,currency=EUR"])
        .unwrap()
        .command
    else {
        panic!("not plan")
    };
    assert_eq!(
        plan.prices.table.map(|table| table.to_string()),
        Some("cpu=0.04,memory=0.005,nvidia.com/gpu=2.5,currency=EUR".into())
    );
    for (bad, said) in [
        (
            "cpu=free,currency=USD",
            "cpu=\"free\": a price is a number from 0 to",
        ),
        ("cpu=0.04", "no currency"),
        (
            "disk=1,currency=USD",
            "\"disk\" is not a resource a price can be given for",
        ),
    ] {
        let error = parse(&["--prices", bad]).unwrap_err().to_string();
        assert!(error.contains(said), "{bad}: {error}");
    }
}

#[test]
fn kubectls_flags_go_before_or_after_the_subcommand_under_either_name() {
    let command_lines: [&[&str]; 3] = [
        &["cronscaler", "-n", "staging", "--context", "prod", "status"],
        &[
            "kubectl-cronscaler",
            "status",
            "-n",
            "staging",
            "--context",
            "prod",
        ],
        &[
            "/home/me/.local/bin/kubectl-cronscaler",
            "--context=prod",
            "status",
            "--namespace=staging",
            "-o",
            "json",
        ],
    ];
    for argv in command_lines {
        let cli = Cli::parse_args(argv).unwrap();
        assert_eq!(cli.kube.context.as_deref(), Some("prod"), "{argv:?}");
        let Command::Status(status) = cli.command else {
            panic!("not status: {argv:?}")
        };
        assert_eq!(status.namespace.as_deref(), Some("staging"), "{argv:?}");
    }
    let cli = Cli::parse_args([
        "kubectl-cronscaler",
        "--kubeconfig",
        "/tmp/kc",
        "-n",
        "staging",
        "restore",
        "web",
    ])
    .unwrap();
    assert_eq!(cli.kube.kubeconfig, Some(PathBuf::from("/tmp/kc")));
    let Command::Restore(restore) = cli.command else {
        panic!("not restore")
    };
    assert_eq!(
        (restore.namespace.as_deref(), restore.name.as_deref()),
        (Some("staging"), Some("web"))
    );
    let Command::Plan(plan) =
        Cli::parse_args(["cronscaler", "plan", "--context", "dev", "-n", "a"])
            .unwrap()
            .command
    else {
        panic!("not plan")
    };
    assert_eq!(plan.namespace.as_deref(), Some("a"));
}

#[test]
fn as_a_kubectl_plugin_help_speaks_of_kubectl_cronscaler() {
    let help = |argv: &[&str]| Cli::parse_args(argv).unwrap_err().to_string();
    let plugin = help(&["/usr/local/bin/kubectl-cronscaler", "status", "--help"]);
    assert!(
        plugin.contains("Usage: kubectl cronscaler status"),
        "{plugin}"
    );
    assert!(plugin.contains("--context <NAME>"), "{plugin}");
    let plain = help(&["cronscaler", "status", "--help"]);
    assert!(plain.contains("Usage: cronscaler status"), "{plain}");
    let error = help(&["kubectl-cronscaler", "stauts"]);
    assert!(error.contains("kubectl cronscaler"), "{error}");
}

#[test]
fn wake_and_sleep_take_a_namespace_before_or_after_and_one_way_to_say_how_long() {
    let parse = |argv: &[&str]| Cli::parse_args(argv);
    for argv in [
        &[
            "cronscaler",
            "wake",
            "-n",
            "staging",
            "deploy/web",
            "--for",
            "2h",
        ][..],
        &[
            "cronscaler",
            "-n",
            "staging",
            "wake",
            "deploy/web",
            "--for=2h",
        ][..],
    ] {
        let Command::Wake(wake) = parse(argv).unwrap().command else {
            panic!("{argv:?} is not a wake");
        };
        assert_eq!(wake.namespace.as_deref(), Some("staging"), "{argv:?}");
        assert_eq!(wake.object.as_deref(), Some("deploy/web"));
        assert_eq!(wake.for_, Some(Duration::from_secs(7200)));
        assert_eq!(wake.max_override, Duration::from_secs(24 * 3600));
    }
    let Command::Sleep(sleep) = parse(&[
        "cronscaler",
        "sleep",
        "-n",
        "staging",
        "--until",
        "2026-11-24T07:00:00+01:00",
    ])
    .unwrap()
    .command
    else {
        panic!("not a sleep");
    };
    assert_eq!(
        sleep.until.map(|until| until.to_rfc3339()),
        Some("2026-11-24T06:00:00+00:00".to_string())
    );
    assert!(
        parse(&[
            "cronscaler",
            "sleep",
            "-n",
            "a",
            "--for",
            "1h",
            "--until",
            "2026-11-24T07:00:00Z"
        ])
        .is_err(),
        "--for or --until, not both"
    );
    let missing = parse(&["cronscaler", "wake", "--for", "1h"]).unwrap_err();
    assert!(
        missing
            .to_string()
            .contains("which namespace? Give it with -n"),
        "{missing}"
    );
}

/// Every command that reads schedules reads those without a zone of their own alike.
#[test]
fn every_command_takes_the_same_default_timezone() {
    let zone_of = |argv: &[&str]| match Cli::try_parse_from(argv).unwrap().command {
        Command::Run(args) => args.default_timezone.zone,
        Command::Plan(args) => args.default_timezone.zone,
        Command::Status(args) => args.reading.default_timezone.zone,
        Command::Wake(args) | Command::Sleep(args) => args.default_timezone.zone,
        other => panic!("{other:?} reads no schedule"),
    };
    for command in ["run", "plan", "status", "wake", "sleep"] {
        let argv = ["cronscaler", command, "-n", "staging"];
        let argv = if command == "run" {
            &["cronscaler", command][..]
        } else {
            &argv[..]
        };
        assert_eq!(zone_of(argv), Tz::UTC, "{command}");
        let with_zone = [argv, &["--default-timezone", "Europe/Berlin"]].concat();
        assert_eq!(zone_of(&with_zone), chrono_tz::Europe::Berlin, "{command}");
    }
}

#[test]
fn opencost_s_own_address_needs_the_prometheus_that_scrapes_it() {
    for command in ["run", "status", "nodes", "console"] {
        let alone = Cli::parse_args(["cronscaler", command, "--opencost-url", "http://oc:9003"]);
        let error = alone.map(|_| ()).unwrap_err().to_string();
        assert!(
            error.contains("give --prometheus-url too"),
            "{command}: {error}"
        );
        let both = Cli::parse_args([
            "cronscaler",
            command,
            "--opencost-url=http://oc:9003",
            "--prometheus-url=http://prom:9090",
        ]);
        assert!(both.is_ok(), "{command}");
    }
    let error = Cli::parse_args(["cronscaler", "status", "--opencost-url", "oc:9003"])
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(error.contains("http://opencost.opencost:9003"), "{error}");
}
