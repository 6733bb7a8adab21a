//! The one sign point: which key signs an actor's records, and signing a
//! record commit with it as git signs a commit.

use gix::bstr::ByteSlice;

use super::{Policy, LIST_PATH};
use crate::error::{Code, Error, Result};
use crate::git::sign::{self, Format};
use crate::store::Store;

impl Store {
    /// The key that would sign `actor`'s records, as `whoami` shows it: its
    /// format (`ssh`, `openpgp`, `x509`) and the key as configured (a path
    /// or a key id). None: records are written unsigned.
    pub fn signing_key_shown(&self, actor: &str) -> Result<Option<(&'static str, String)>> {
        Ok(self.signing_key(actor)?.map(|(format, key, _)| {
            let name = match format {
                Format::Ssh => "ssh",
                Format::OpenPgp => "openpgp",
                Format::X509 => "x509",
            };
            (name, key)
        }))
    }

    /// The key that signs `actor`'s records, if any: its own
    /// `swarm.<actor>.signingKey` (ssh), else, with trust on, git's
    /// `user.signingKey` when git signs commits here (`commit.gpgSign`), in
    /// `gpg.format` (under require only ssh, the format that is checked).
    fn signing_key(&self, actor: &str) -> Result<Option<(Format, String, Option<String>)>> {
        let config = self.repo.config_snapshot();
        let own = config
            .string(format!("swarm.{actor}.signingKey").as_str())
            .map(|v| v.to_str_lossy().into_owned())
            .filter(|v| !v.is_empty());
        let (format, key) = match own {
            Some(key) => (Format::Ssh, key),
            None => {
                // git's own key signs records only when trust is on: with
                // trust off a gpg prompt or failure on every record write
                // would buy nothing.
                if self.trust.policy == Policy::Off
                    || !config.boolean("commit.gpgSign").unwrap_or(false)
                {
                    return Ok(None);
                }
                let Some(key) = config
                    .string("user.signingKey")
                    .map(|v| v.to_str_lossy().into_owned())
                    .filter(|v| !v.is_empty())
                else {
                    return Ok(None);
                };
                let format = config
                    .string("gpg.format")
                    .map(|v| v.to_str_lossy().into_owned());
                let format = Format::parse(format.as_deref())?;
                // Only ssh signatures are checked: under require an openpgp
                // or x509 one would make a record every clone skips.
                if self.trust.policy == Policy::Require && format != Format::Ssh {
                    return Ok(None);
                }
                (format, key)
            }
        };
        let program_key = match format {
            Format::Ssh => "gpg.ssh.program",
            Format::X509 => "gpg.x509.program",
            Format::OpenPgp => "gpg.program",
        };
        let program = config
            .string(program_key)
            .map(|v| v.to_str_lossy().into_owned());
        Ok(Some((format, key, program)))
    }

    /// The one sign point: `commit` signed by `actor`'s key when one is
    /// configured (see [`Store::commit`]).
    pub(in crate::store) fn sign_commit(
        &self,
        commit: &mut gix::objs::Commit,
        actor: &str,
    ) -> Result<()> {
        let Some((format, key, program)) = self.signing_key(actor)? else {
            if self.trust.policy == Policy::Require {
                // Every clone would skip the record: refuse before any ref moves.
                return Err(Error::new(
                    Code::SigningKeyMissing,
                    format!("swarm.trust=require and no key signs the records of {actor}; nothing was written"),
                )
                .hint(format!("make one with `git swarm agent keygen --as {actor}` and add the line it prints to {LIST_PATH} on the base branch, or set `git config swarm.{actor}.signingKey <ssh key>`")));
            }
            return Ok(());
        };
        use gix::objs::WriteTo;
        let mut payload = Vec::new();
        commit
            .write_to(&mut payload)
            .map_err(|e| Error::gix("could not serialise a commit to sign", e))?;
        let sig = sign::sign(format, program.as_deref(), &key, &payload)
            .map_err(|e| e.hint(format!("records of {actor} are signed with {key}")))?;
        let sig = String::from_utf8_lossy(&sig).trim_end().to_string();
        commit.extra_headers.push(("gpgsig".into(), sig.into()));
        Ok(())
    }
}
