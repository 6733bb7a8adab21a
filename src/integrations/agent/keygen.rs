//! `agent keygen`: an ssh signing key for one address, kept in this clone
//! (`<common dir>/swarm/keys/<address>`) and named by
//! `swarm.<address>.signingKey`, so that every record that address writes
//! here is signed; it prints the line to add to the trust list.

use crate::error::{Code, Error, Result};
use crate::git::sign::SshKey;
use crate::session::Ctx;
use crate::store::trust::LIST_PATH;

/// What `agent keygen` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Keygen {
    pub address: String,
    /// The private key file (its public half beside it, `.pub`).
    pub key: String,
    /// False when the address already had a key, which is kept.
    pub created: bool,
    /// The line for `.swarm/allowed_signers` on the base branch.
    pub allowed_signers: String,
    pub config: String,
}

pub fn keygen(ctx: &Ctx) -> Result<Keygen> {
    let address = ctx.actor()?;
    let config = format!("swarm.{address}.signingKey");
    let configured = ctx.store.config(&config).filter(|v| !v.is_empty());
    let (key, created) = match configured {
        // Named as git names a key: a path (`~` expanded) or a literal one.
        Some(value) => (SshKey::parse(&value)?, false),
        None => {
            let dir = ctx.store.common_dir().join("swarm").join("keys");
            std::fs::create_dir_all(&dir).map_err(|e| {
                Error::new(
                    Code::IoFailed,
                    format!("cannot create {}: {e}", dir.display()),
                )
            })?;
            let key = dir.join(&address);
            let created = !key.exists();
            if created {
                crate::git::sign::ssh_keygen(
                    ctx.store.config("gpg.ssh.program").as_deref(),
                    &key,
                    &address,
                )?;
            }
            let path = key.to_string_lossy().into_owned();
            ctx.store.git.run(["config", &config, &path])?;
            (SshKey::File(key), created)
        }
    };
    let shown = match &key {
        SshKey::File(path) => path.to_string_lossy().into_owned(),
        SshKey::Literal(public) => format!("key::{public}"),
    };
    let public = key.public().map_err(|e| {
        e.hint(format!(
            "{config} names {shown}; its public half must be beside it ({shown}.pub)"
        ))
    })?;
    // `type base64 [comment]`: the comment is not part of the key.
    let mut words = public.split_whitespace();
    let (Some(kind), Some(blob)) = (words.next(), words.next()) else {
        return Err(Error::new(
            Code::SigningFailed,
            format!("{shown} is not an ssh public key"),
        ));
    };
    Ok(Keygen {
        allowed_signers: format!("{address} namespaces=\"git\" {kind} {blob}"),
        address,
        key: shown,
        created,
        config,
    })
}

impl Keygen {
    pub fn text(&self) -> String {
        let what = if self.created {
            format!(
                "made an ssh signing key for {} at {}",
                self.address, self.key
            )
        } else {
            format!("{} already has a signing key: {}", self.address, self.key)
        };
        format!(
            "{what}\n{} = {} (records {} writes in this clone are signed with it)\nadd this line to {LIST_PATH} on the base branch (through its usual review):\n{}\n",
            self.config, self.key, self.address, self.allowed_signers
        )
    }
}
