//! Ticket codes that a gate scanner verifies offline with the payments service's
//! Ed25519 public key (RFC 8032): `T1.<payload>.<signature>`, both parts unpadded
//! base64url, the payload being `<ticket uuid>:<event id>:<section id>:<seat id>` in
//! ASCII. The signature covers `stadium-ticket-v1:` followed by the payload, so a
//! signature made by the same key for anything else never passes as a ticket.
//!
//! Ed25519 rather than HMAC because verifiers (scanners at the gates) must not be able
//! to mint tickets: they hold the public key only.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use uuid::Uuid;

const PREFIX: &str = "T1";
const CONTEXT: &[u8] = b"stadium-ticket-v1:";

/// What a ticket code says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TicketClaims {
    /// The ticket id.
    pub ticket_id: Uuid,
    /// The event (catalog id).
    pub event_id: i64,
    /// The section (catalog id).
    pub section_id: i64,
    /// The seat (catalog id).
    pub seat_id: i64,
}

/// Why a ticket code was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TicketCodeError {
    /// Not `T1.<payload>.<signature>` with base64url parts and a four-field payload.
    #[error("malformed ticket code: {0}")]
    Malformed(&'static str),
    /// Well formed, but the signature does not verify with this key.
    #[error("the ticket code's signature does not verify")]
    BadSignature,
}

/// Signs ticket codes with a 32-byte Ed25519 seed.
#[derive(Clone)]
pub struct TicketSigner {
    key: SigningKey,
}

impl std::fmt::Debug for TicketSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TicketSigner")
            .field(
                "public_key",
                &hex::encode(self.key.verifying_key().as_bytes()),
            )
            .finish_non_exhaustive()
    }
}

impl TicketSigner {
    /// A signer from a 32-byte seed (keep it secret; the same seed verifies old tickets
    /// after a restart).
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        Self {
            key: SigningKey::from_bytes(seed),
        }
    }

    /// The public half, for scanners.
    pub fn verifier(&self) -> TicketVerifier {
        TicketVerifier {
            key: self.key.verifying_key(),
        }
    }

    /// The code of a ticket.
    pub fn sign(&self, claims: &TicketClaims) -> String {
        let payload = format!(
            "{}:{}:{}:{}",
            claims.ticket_id, claims.event_id, claims.section_id, claims.seat_id
        );
        let mut message = CONTEXT.to_vec();
        message.extend_from_slice(payload.as_bytes());
        let signature = self.key.sign(&message);
        format!(
            "{PREFIX}.{}.{}",
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(signature.to_bytes())
        )
    }
}

/// Verifies ticket codes with an Ed25519 public key.
#[derive(Debug, Clone)]
pub struct TicketVerifier {
    key: VerifyingKey,
}

impl TicketVerifier {
    /// The public key's 32 bytes, hex (what a scanner is configured with).
    pub fn public_key_hex(&self) -> String {
        hex::encode(self.key.as_bytes())
    }

    /// The claims of `code` if its signature verifies (strict RFC 8032 verification,
    /// so a malleated signature is refused too).
    ///
    /// # Errors
    /// [`TicketCodeError::Malformed`]; [`TicketCodeError::BadSignature`].
    pub fn verify(&self, code: &str) -> Result<TicketClaims, TicketCodeError> {
        if code.len() > 512 {
            return Err(TicketCodeError::Malformed("too long"));
        }
        let mut parts = code.trim().split('.');
        let (Some(PREFIX), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TicketCodeError::Malformed(
                "expected T1.<payload>.<signature>",
            ));
        };
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| TicketCodeError::Malformed("payload is not base64url"))?;
        let signature: [u8; 64] = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| TicketCodeError::Malformed("signature is not base64url"))?
            .try_into()
            .map_err(|_| TicketCodeError::Malformed("signature is not 64 bytes"))?;
        let mut message = CONTEXT.to_vec();
        message.extend_from_slice(&payload);
        self.key
            .verify_strict(&message, &Signature::from_bytes(&signature))
            .map_err(|_| TicketCodeError::BadSignature)?;
        let text =
            std::str::from_utf8(&payload).map_err(|_| TicketCodeError::Malformed("payload"))?;
        let fields: Vec<&str> = text.split(':').collect();
        let [id, event, section, seat] = fields.as_slice() else {
            return Err(TicketCodeError::Malformed("payload needs four fields"));
        };
        let number = |s: &str| {
            s.parse::<i64>()
                .map_err(|_| TicketCodeError::Malformed("payload id"))
        };
        Ok(TicketClaims {
            ticket_id: Uuid::parse_str(id).map_err(|_| TicketCodeError::Malformed("ticket id"))?,
            event_id: number(event)?,
            section_id: number(section)?,
            seat_id: number(seat)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> TicketClaims {
        TicketClaims {
            ticket_id: Uuid::new_v4(),
            event_id: 7,
            section_id: 3,
            seat_id: 1042,
        }
    }

    #[test]
    fn a_signed_code_verifies_with_the_public_key_only() {
        let signer = TicketSigner::from_seed(&[7; 32]);
        let claims = claims();
        let code = signer.sign(&claims);
        assert_eq!(signer.verifier().verify(&code), Ok(claims));
    }

    #[test]
    fn another_key_or_a_changed_payload_is_refused() {
        let signer = TicketSigner::from_seed(&[7; 32]);
        let code = signer.sign(&claims());
        let stranger = TicketSigner::from_seed(&[8; 32]).verifier();
        assert_eq!(stranger.verify(&code), Err(TicketCodeError::BadSignature));

        let mut other = claims();
        other.seat_id = 1043;
        let forged_payload = signer.sign(&other);
        let (_, sig) = code.rsplit_once('.').unwrap();
        let (head, _) = forged_payload.rsplit_once('.').unwrap();
        assert_eq!(
            signer.verifier().verify(&format!("{head}.{sig}")),
            Err(TicketCodeError::BadSignature)
        );
    }

    #[test]
    fn garbage_is_malformed_not_a_panic() {
        let verifier = TicketSigner::from_seed(&[1; 32]).verifier();
        for code in [
            "", "T1", "T1..", "T2.a.b", "T1.!!.??", "T1.YQ.YQ", "a.b.c.d",
        ] {
            assert!(
                matches!(verifier.verify(code), Err(TicketCodeError::Malformed(_))),
                "{code}"
            );
        }
    }
}
