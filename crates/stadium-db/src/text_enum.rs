//! Domain enums stored as `text` columns (statuses and kinds, each column guarded by a
//! `CHECK` in its migration), decoded and bound as the enum itself in checked queries
//! (`SELECT status AS "status: HoldStatus"`), without the domain type depending on sqlx.

/// Implements `sqlx::Type`, `Decode` and `Encode` for PostgreSQL on the enum `$ty`, a
/// `text` value spelled by `$ty::as_str(self) -> &'static str` and read back by
/// `$ty::from_db(&str) -> Option<Self>`. A value `from_db` does not know decodes to an
/// error naming it (a row this version cannot read), never to a default.
///
/// Invoke it in the crate that defines `$ty` (Rust's orphan rule), in its `store/`.
#[macro_export]
macro_rules! text_enum {
    ($ty:ty) => {
        impl ::sqlx::Type<::sqlx::Postgres> for $ty {
            fn type_info() -> ::sqlx::postgres::PgTypeInfo {
                <&str as ::sqlx::Type<::sqlx::Postgres>>::type_info()
            }

            fn compatible(ty: &::sqlx::postgres::PgTypeInfo) -> bool {
                <&str as ::sqlx::Type<::sqlx::Postgres>>::compatible(ty)
            }
        }

        impl<'r> ::sqlx::Decode<'r, ::sqlx::Postgres> for $ty {
            fn decode(
                value: ::sqlx::postgres::PgValueRef<'r>,
            ) -> ::std::result::Result<Self, ::sqlx::error::BoxDynError> {
                let text = <&str as ::sqlx::Decode<::sqlx::Postgres>>::decode(value)?;
                <$ty>::from_db(text)
                    .ok_or_else(|| format!("unknown {} {text:?}", ::std::stringify!($ty)).into())
            }
        }

        impl ::sqlx::Encode<'_, ::sqlx::Postgres> for $ty {
            fn encode_by_ref(
                &self,
                buf: &mut ::sqlx::postgres::PgArgumentBuffer,
            ) -> ::std::result::Result<::sqlx::encode::IsNull, ::sqlx::error::BoxDynError> {
                <&str as ::sqlx::Encode<::sqlx::Postgres>>::encode(self.as_str(), buf)
            }
        }
    };
}
