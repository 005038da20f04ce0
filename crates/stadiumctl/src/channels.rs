//! `channel …`: channels and presale codes through the box office (which passes them to
//! holds). Keys and codes are printed once, when made; nothing keeps them.

use serde_json::json;
use stadium_proto::holds::v1::{self as holds, assign_channel_seats_request::Seats};

use crate::args::ChannelCommand;
use crate::{CliError, Client, Outcome, render};

/// Runs a `channel` subcommand.
///
/// # Errors
/// [`CliError::Status`] from the box office or holds; [`CliError::Other`] for
/// `assign` without seats or a category.
pub(crate) async fn run(c: &mut Client, cmd: ChannelCommand) -> Result<Outcome, CliError> {
    match cmd {
        ChannelCommand::Create {
            event_id,
            name,
            release_at,
        } => {
            let req = c.request(holds::CreateChannelRequest {
                event_id,
                name,
                release_at,
            })?;
            let r = c.inner.create_channel(req).await?.into_inner();
            let channel = r.channel.unwrap_or_default();
            Ok(Outcome::new(
                format!(
                    "{}key (shown once): {}\n",
                    table(std::slice::from_ref(&channel)),
                    r.key
                ),
                json!({ "channel": channel_json(&channel), "key": r.key }),
            ))
        }
        ChannelCommand::Assign {
            channel_id,
            seats,
            best,
            quantity,
        } => {
            let seats = match (best, quantity) {
                (Some(price_category), Some(quantity)) => Seats::Best(holds::BestSeats {
                    price_category,
                    quantity,
                }),
                _ if !seats.is_empty() => Seats::SeatIds(holds::SeatList { seat_ids: seats }),
                _ => {
                    return Err(CliError::Other(
                        "give --seats, or --best CATEGORY with --quantity".into(),
                    ));
                }
            };
            let req = c.request(holds::AssignChannelSeatsRequest {
                channel_id,
                seats: Some(seats),
            })?;
            let r = c.inner.assign_channel_seats(req).await?.into_inner();
            let channel = r.channel.unwrap_or_default();
            Ok(Outcome::new(
                format!(
                    "{}assigned {} seats\n",
                    table(std::slice::from_ref(&channel)),
                    r.seat_ids.len()
                ),
                json!({ "channel": channel_json(&channel), "seat_ids": r.seat_ids }),
            ))
        }
        ChannelCommand::Codes {
            channel_id,
            count,
            max_seats,
            max_seats_per_fan,
        } => {
            let req = c.request(holds::CreatePresaleCodesRequest {
                channel_id,
                count,
                max_seats,
                max_seats_per_fan,
            })?;
            let r = c.inner.create_presale_codes(req).await?.into_inner();
            let mut text = r.codes.join("\n");
            text.push('\n');
            Ok(Outcome::new(text, json!({ "codes": r.codes })))
        }
        ChannelCommand::Release { channel_id } => {
            let req = c.request(holds::ReleaseChannelRequest { channel_id })?;
            let r = c.inner.release_channel(req).await?.into_inner();
            let channel = r.channel.unwrap_or_default();
            Ok(Outcome::new(
                format!(
                    "{}released {} seats to general sale\n",
                    table(std::slice::from_ref(&channel)),
                    r.released_seats
                ),
                json!({ "channel": channel_json(&channel), "released_seats": r.released_seats }),
            ))
        }
        ChannelCommand::List { event_id } => {
            let req = c.request(holds::ListChannelsRequest { event_id })?;
            let r = c.inner.list_channels(req).await?.into_inner();
            Ok(Outcome::new(
                table(&r.channels),
                json!(r.channels.iter().map(channel_json).collect::<Vec<_>>()),
            ))
        }
    }
}

fn table(channels: &[holds::Channel]) -> String {
    let rows: Vec<Vec<String>> = channels
        .iter()
        .map(|c| {
            vec![
                c.channel_id.to_string(),
                c.name.clone(),
                c.seats.to_string(),
                c.available.to_string(),
                c.held.to_string(),
                c.booked.to_string(),
                format!("{} ({} seats in use)", c.codes, c.code_seats_in_use),
                match (&c.released_at, &c.release_at) {
                    (Some(at), _) => format!("released {}", render::time(Some(at))),
                    (None, Some(at)) => format!("until {}", render::time(Some(at))),
                    (None, None) => "until released".into(),
                },
            ]
        })
        .collect();
    render::table(
        &[
            "CHANNEL",
            "NAME",
            "SEATS",
            "AVAILABLE",
            "HELD",
            "BOOKED",
            "CODES",
            "SALE",
        ],
        &rows,
    )
}

fn channel_json(c: &holds::Channel) -> serde_json::Value {
    json!({
        "channel_id": c.channel_id,
        "event_id": c.event_id,
        "name": c.name,
        "seats": c.seats,
        "available": c.available,
        "held": c.held,
        "booked": c.booked,
        "codes": c.codes,
        "code_seats_in_use": c.code_seats_in_use,
        "release_at": c.release_at.as_ref().map(|t| render::time(Some(t))),
        "released_at": c.released_at.as_ref().map(|t| render::time(Some(t))),
    })
}
