//! Enums whose variants have fixed wire names: the strings status fields, Events, JSON
//! output and metric labels carried before they were typed. One macro so every such enum
//! reads, writes, prints and sorts the same way.

use std::fmt;

/// A string that names no variant of a wire enum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownName {
    pub what: &'static str,
    pub name: String,
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {} {:?}", self.what, self.name)
    }
}

impl std::error::Error for UnknownName {}

/// Defines a fieldless enum with a wire name per variant: `as_str`, `Display`, `FromStr`,
/// serde as that string, `ALL` and `NAMES` in declaration order. Ordered by wire name,
/// so sorting gives the order the strings it replaced had (output order unchanged).
#[macro_export]
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];
            /// Every wire name, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($text,)+];

            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::wire::UnknownName;
            fn from_str(s: &str) -> ::std::result::Result<Self, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err($crate::wire::UnknownName {
                        what: stringify!($name),
                        name: s.to_string(),
                    }),
                }
            }
        }

        impl ::std::cmp::Ord for $name {
            fn cmp(&self, other: &Self) -> ::std::cmp::Ordering {
                self.as_str().cmp(other.as_str())
            }
        }

        impl ::std::cmp::PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<::std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl $crate::wire::serde::Serialize for $name {
            fn serialize<S: $crate::wire::serde::Serializer>(
                &self,
                s: S,
            ) -> ::std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> $crate::wire::serde::Deserialize<'de> for $name {
            fn deserialize<D: $crate::wire::serde::Deserializer<'de>>(
                d: D,
            ) -> ::std::result::Result<Self, D::Error> {
                let s = <::std::borrow::Cow<'de, str> as $crate::wire::serde::Deserialize>::deserialize(d)?;
                s.parse().map_err(|_| {
                    <D::Error as $crate::wire::serde::de::Error>::unknown_variant(&s, Self::NAMES)
                })
            }
        }
    };
}

#[doc(hidden)]
pub use serde;

/// The JSON Schema of a wire enum or of a value written as text (the MCP tools' output
/// schemas): a string, with the enum's names when it has them.
#[cfg(feature = "schema")]
macro_rules! text_schema {
    ($ty:ty, $name:literal, $names:expr) => {
        impl schemars::JsonSchema for $ty {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                $name.into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let names: Option<&[&str]> = $names;
                match names {
                    Some(n) => schemars::json_schema!({ "type": "string", "enum": n }),
                    None => schemars::json_schema!({ "type": "string" }),
                }
            }
        }
    };
}

#[cfg(feature = "schema")]
text_schema!(
    crate::FindingReason,
    "FindingReason",
    Some(crate::FindingReason::NAMES)
);
#[cfg(feature = "schema")]
text_schema!(
    crate::queries::DriftSource,
    "DriftSource",
    Some(crate::queries::DriftSource::NAMES)
);
#[cfg(feature = "schema")]
text_schema!(crate::model::ObjectRef, "ObjectRef", None);

/// `serialize_with` for a field written as its `Display` text.
pub fn display<T: fmt::Display, S: serde::Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

#[cfg(test)]
mod tests {
    wire_enum! {
        enum Sample {
            B = "Beta",
            A = "Alpha",
        }
    }

    #[test]
    fn names_round_trip_through_serde_and_from_str() {
        for v in Sample::ALL {
            let json = serde_json::to_string(v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.as_str()));
            assert_eq!(serde_json::from_str::<Sample>(&json).unwrap(), *v);
            assert_eq!(v.as_str().parse::<Sample>().unwrap(), *v);
            assert_eq!(v.to_string(), v.as_str());
        }
        assert!(serde_json::from_str::<Sample>("\"B\"").is_err());
        assert!("alpha".parse::<Sample>().is_err());
    }

    #[test]
    fn order_is_the_order_of_the_names() {
        let mut v = Sample::ALL.to_vec();
        v.sort();
        assert_eq!(v, [Sample::A, Sample::B]);
    }
}
