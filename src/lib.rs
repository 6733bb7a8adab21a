//! git-swarm: plans, lanes, handoff packets and leader records kept in git
//! refs and notes, so a coordinator and many parallel agents can work on one
//! repository without losing work, trust or direction.
//!
//! The library holds the domain logic; it never prints and never exits.
//! `src/main.rs` and `src/cli/` parse arguments and render what it returns (`cli::output::Output`).

/// An enum for a closed set of states that a record writes as strings
/// (`state: active`), with an `Other` arm that keeps a value a newer
/// version wrote as it was: a record an older binary cannot name stays
/// readable, and is written back unchanged. Serialized as the string, so
/// the YAML and the `--json` shapes are the strings they always were.
macro_rules! open_enum {
    ($(#[$m:meta])* $vis:vis enum $name:ident {
        $($(#[$vm:meta])* $var:ident = $s:literal),+ $(,)?
    }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis enum $name {
            $($(#[$vm])* $var,)+
            /// A value this version does not know, kept as written.
            Other(String),
        }
        impl $name {
            /// Every value this version knows, as written.
            pub const NAMES: &'static [&'static str] = &[$($s),+];
            pub fn parse(s: &str) -> Self {
                match s {
                    $($s => $name::$var,)+
                    other => $name::Other(other.to_string()),
                }
            }
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$var => $s,)+
                    $name::Other(s) => s,
                }
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                $name::parse(s)
            }
        }
        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                String::deserialize(d).map(|s| $name::parse(&s))
            }
        }
    };
}

pub mod clock;
pub mod complete;
pub mod config;
pub mod error;
pub mod failpoint;
pub mod fsutil;
pub mod git;
pub mod guards;
pub mod integrations;
pub mod names;
pub mod ops;
pub mod records;
pub mod secret;
pub mod session;
pub mod store;
pub mod text;
pub mod views;
pub mod worktree;
