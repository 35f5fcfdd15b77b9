//! The AWS shared configuration and credentials files, read as the AWS
//! tools read them: `AWS_CONFIG_FILE` (else `~/.aws/config`, sections
//! `[profile NAME]` and `[default]`) and `AWS_SHARED_CREDENTIALS_FILE`
//! (else `~/.aws/credentials`, sections `[NAME]`), for the profile
//! `AWS_PROFILE` names (else `default`). Environment variables win over
//! both, and the credentials file over the config file.

use std::collections::HashMap;
use std::path::PathBuf;

/// The settings a profile gives, by key (`aws_access_key_id`, `region`,
/// `endpoint_url`, ...), lower-cased.
pub(crate) fn settings() -> HashMap<String, String> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home = env("HOME").map(|h| h.join(".aws"));
    let profile = std::env::var("AWS_PROFILE").ok().filter(|p| !p.is_empty()).unwrap_or_else(|| "default".into());
    let mut out = HashMap::new();
    let config = env("AWS_CONFIG_FILE").or_else(|| home.as_ref().map(|h| h.join("config")));
    let credentials = env("AWS_SHARED_CREDENTIALS_FILE").or_else(|| home.as_ref().map(|h| h.join("credentials")));
    let config_section = if profile == "default" { "default".to_owned() } else { format!("profile {profile}") };
    for (file, section) in [(config, config_section), (credentials, profile)] {
        if let Some(text) = file.and_then(|f| std::fs::read_to_string(f).ok()) {
            out.extend(section_of(&text, &section));
        }
    }
    out
}

/// The `key = value` lines of `[section]` in an INI text.
fn section_of(text: &str, section: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = name.trim() == section;
        } else if let (true, Some((k, v))) = (inside, line.split_once('=')) {
            out.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::section_of;

    #[test]
    fn sections_are_read_apart() {
        let text =
            "[default]\nregion = us-east-1\n# c\n[profile dev]\nregion=eu-west-1\nendpoint_url = http://127.0.0.1:9\n";
        assert_eq!(section_of(text, "default")["region"], "us-east-1");
        let dev = section_of(text, "profile dev");
        assert_eq!(dev["region"], "eu-west-1");
        assert_eq!(dev["endpoint_url"], "http://127.0.0.1:9");
        assert!(section_of(text, "other").is_empty());
    }
}

#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;

    proptest! {
        /// Any text reads as some settings, never a panic.
        #[test]
        fn any_text_reads(text in "[\\[\\]=#;a-z \n]{0,200}") {
            let _ = super::section_of(&text, "default");
        }
    }
}
