//! The backfill client's settings (BACKFILL_SYSTEM and `<SYSTEM>_*`, the
//! names HTCondor's starter reads, or the submit commands' names) and the
//! job ad the execute point runs it from.

use startd::policy::Policy;

fn config(text: &str) -> config::Config {
    config::load(
        &config::LoadOptions::new("STARTD", config::Root::File("condor_config".into())),
        &config::MemFiles::new().with("condor_config", text),
        &config::FixedHost::empty().with_macro("DETECTED_CORES", "2"),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn text(ad: &classad::ClassAd, name: &str) -> Option<String> {
    ad.eval_attr(name, &classad::Env::default())
        .as_str()
        .map(str::to_string)
}

#[test]
fn the_boinc_settings_become_the_client_s_job_ad() {
    let c = config(
        "ENABLE_BACKFILL = TRUE\nBACKFILL_SYSTEM = BOINC\nBOINC_HOME = /var/lib/boinc\n\
         BOINC_Executable = /usr/bin/boinc_client\nBOINC_InitialDir = $(BOINC_HOME)\n\
         BOINC_Owner = boinc\nBOINC_Arguments = --dir $(BOINC_HOME)\n\
         BOINC_Environment = HOME=$(BOINC_HOME)\nBOINC_Output = $(BOINC_HOME)/boinc.out\n\
         BOINC_Err = $(BOINC_HOME)/boinc.err\n",
    );
    let p = Policy::read(&c, 1, None).unwrap();
    let program = p.backfill.unwrap();
    let ad = program.job_ad().unwrap();
    assert_eq!(text(&ad, "Cmd").as_deref(), Some("/usr/bin/boinc_client"));
    assert_eq!(text(&ad, "Iwd").as_deref(), Some("/var/lib/boinc"));
    assert_eq!(text(&ad, "Owner").as_deref(), Some("boinc"));
    assert_eq!(
        text(&ad, "Arguments").as_deref(),
        Some("--dir /var/lib/boinc")
    );
    assert_eq!(
        text(&ad, "Environment").as_deref(),
        Some("HOME=/var/lib/boinc")
    );
    assert_eq!(
        text(&ad, "Out").as_deref(),
        Some("/var/lib/boinc/boinc.out")
    );
    // HTCondor's other name for it (the job attribute's).
    assert_eq!(
        text(&ad, "Err").as_deref(),
        Some("/var/lib/boinc/boinc.err")
    );
    assert_eq!(text(&ad, "KillSig").as_deref(), Some("SIGTERM"));
    assert_eq!(text(&ad, "ShouldTransferFiles").as_deref(), Some("NO"));
}

#[test]
fn a_client_without_executable_or_initial_dir_is_refused_naming_the_setting() {
    let c = config("BACKFILL_SYSTEM = BOINC\nBOINC_InitialDir = /tmp\n");
    let e = Policy::read(&c, 1, None)
        .unwrap()
        .backfill
        .unwrap()
        .job_ad()
        .unwrap_err();
    assert_eq!(
        e,
        "BACKFILL_SYSTEM is BOINC, but BOINC_Executable is not set"
    );
    let c = config("BACKFILL_SYSTEM = BOINC\nBOINC_Cmd = /bin/true\n");
    let e = Policy::read(&c, 1, None)
        .unwrap()
        .backfill
        .unwrap()
        .job_ad()
        .unwrap_err();
    assert_eq!(
        e,
        "BACKFILL_SYSTEM is BOINC, but BOINC_InitialDir is not set"
    );
}
