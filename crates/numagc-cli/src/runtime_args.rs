//! Runtime settings as command-line flags, generated from the library's
//! settings table (`numagc::config::settings`), so every setting has the
//! same name on the command line as in `NUMAGC_*` variables and in docs.
//! Environment variables are read first; flags override them.

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use numagc::config::{settings, Config, ConfigBuilder};

#[derive(Clone, Debug, Default)]
pub struct RuntimeArgs {
    /// (setting, value) pairs given on the command line, in order.
    pub values: Vec<(&'static str, String)>,
}

impl RuntimeArgs {
    /// The configuration: defaults, then `NUMAGC_*`, then flags.
    pub fn builder(&self) -> Result<ConfigBuilder, String> {
        let mut b = ConfigBuilder::from_env().map_err(|e| e.to_string())?;
        for (name, value) in &self.values {
            b.set(name, value).map_err(|e| e.to_string())?;
        }
        Ok(b)
    }

    pub fn config(&self) -> Result<Config, String> {
        self.builder()?.build().map_err(|e| e.to_string())
    }

    /// Whether a setting was given on the command line.
    pub fn has(&self, name: &str) -> bool {
        self.values.iter().any(|(n, _)| *n == name)
    }
}

impl FromArgMatches for RuntimeArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut a = RuntimeArgs::default();
        a.update_from_arg_matches(m)?;
        Ok(a)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        for s in settings() {
            if let Some(v) = m.get_one::<String>(s.name) {
                self.values.push((s.name, v.clone()));
            }
        }
        Ok(())
    }
}

impl Args for RuntimeArgs {
    fn augment_args(cmd: Command) -> Command {
        let mut cmd = cmd;
        for s in settings() {
            let mut arg = Arg::new(s.name)
                .long(s.name)
                .help(format!("{} [env: {}]", s.help, s.env))
                .action(ArgAction::Set)
                .help_heading("Runtime settings");
            if s.flag {
                arg = arg.num_args(0..=1).require_equals(true).default_missing_value("true").value_name("BOOL");
            } else {
                arg = arg.value_name("VALUE");
            }
            cmd = cmd.arg(arg);
        }
        cmd
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}
