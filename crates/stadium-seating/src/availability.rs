//! Availability of one section: a bitmap over its contiguous seat-id range.

use crate::error::AvailabilityError;

/// Which seats of `[first_seat_id, first_seat_id + seat_count)` are free.
///
/// Wire form (seat-map contract, `SectionAvailability.available_bitmap`): bit `i`,
/// LSB first within each byte, is 1 when seat `first_seat_id + i` is available; the
/// bitmap is exactly `ceil(seat_count / 8)` bytes and bits past the last seat are 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Availability {
    first_seat_id: u64,
    seat_count: u32,
    bits: Vec<u8>,
    available: u32,
}

fn byte_len(seat_count: u32) -> usize {
    (seat_count as usize).div_ceil(8)
}

impl Availability {
    /// Every seat of the range available.
    ///
    /// Errors: [`AvailabilityError::RangeOverflow`] when the range passes `u64::MAX`.
    pub fn all_available(first_seat_id: u64, seat_count: u32) -> Result<Self, AvailabilityError> {
        let mut this = Self::none_available(first_seat_id, seat_count)?;
        this.bits.fill(0xff);
        this.clear_trailing();
        this.available = seat_count;
        Ok(this)
    }

    /// No seat of the range available.
    ///
    /// Errors: [`AvailabilityError::RangeOverflow`] when the range passes `u64::MAX`.
    pub fn none_available(first_seat_id: u64, seat_count: u32) -> Result<Self, AvailabilityError> {
        if first_seat_id.checked_add(u64::from(seat_count)).is_none() {
            return Err(AvailabilityError::RangeOverflow { first_seat_id });
        }
        Ok(Self {
            first_seat_id,
            seat_count,
            bits: vec![0; byte_len(seat_count)],
            available: 0,
        })
    }

    /// The range with every seat available except `unavailable` (any order, repeats
    /// allowed), as built from the database's list of taken seats.
    ///
    /// Errors: [`AvailabilityError::OutOfRange`] for an id outside the range, or
    /// [`AvailabilityError::RangeOverflow`].
    pub fn from_unavailable(
        first_seat_id: u64,
        seat_count: u32,
        unavailable: impl IntoIterator<Item = u64>,
    ) -> Result<Self, AvailabilityError> {
        let mut this = Self::all_available(first_seat_id, seat_count)?;
        for seat_id in unavailable {
            this.set(seat_id, false)?;
        }
        Ok(this)
    }

    /// Decodes the wire bitmap.
    ///
    /// Errors: [`AvailabilityError::WrongLength`] unless `bitmap` is exactly
    /// `ceil(seat_count / 8)` bytes, [`AvailabilityError::TrailingBits`] when bits past
    /// the last seat are set, [`AvailabilityError::RangeOverflow`].
    pub fn from_bitmap(
        first_seat_id: u64,
        seat_count: u32,
        bitmap: &[u8],
    ) -> Result<Self, AvailabilityError> {
        let mut this = Self::none_available(first_seat_id, seat_count)?;
        if bitmap.len() != this.bits.len() {
            return Err(AvailabilityError::WrongLength {
                seat_count,
                expected: this.bits.len(),
                actual: bitmap.len(),
            });
        }
        this.bits.copy_from_slice(bitmap);
        let before: u32 = this.bits.iter().map(|b| b.count_ones()).sum();
        this.clear_trailing();
        let after: u32 = this.bits.iter().map(|b| b.count_ones()).sum();
        if before != after {
            return Err(AvailabilityError::TrailingBits { seat_count });
        }
        this.available = after;
        Ok(this)
    }

    fn clear_trailing(&mut self) {
        let used = self.seat_count % 8;
        if used != 0
            && let Some(last) = self.bits.last_mut()
        {
            *last &= (1u8 << used) - 1;
        }
    }

    fn offset(&self, seat_id: u64) -> Result<usize, AvailabilityError> {
        match seat_id.checked_sub(self.first_seat_id) {
            Some(offset) if offset < u64::from(self.seat_count) => Ok(offset as usize),
            _ => Err(AvailabilityError::OutOfRange {
                seat_id,
                first_seat_id: self.first_seat_id,
                seat_count: self.seat_count,
            }),
        }
    }

    /// Marks one seat available or not.
    ///
    /// Errors: [`AvailabilityError::OutOfRange`] for an id outside the range.
    pub fn set(&mut self, seat_id: u64, available: bool) -> Result<(), AvailabilityError> {
        let offset = self.offset(seat_id)?;
        let mask = 1u8 << (offset % 8);
        let byte = &mut self.bits[offset / 8];
        let was = *byte & mask != 0;
        if available && !was {
            *byte |= mask;
            self.available += 1;
        } else if !available && was {
            *byte &= !mask;
            self.available -= 1;
        }
        Ok(())
    }

    /// Whether the seat is available; `false` for ids outside the range.
    pub fn is_available(&self, seat_id: u64) -> bool {
        self.offset(seat_id)
            .is_ok_and(|offset| self.is_available_at(offset))
    }

    /// Whether the seat at `offset` (`seat_id - first_seat_id`) is available; `false`
    /// past the range.
    pub fn is_available_at(&self, offset: usize) -> bool {
        offset < self.seat_count as usize && self.bits[offset / 8] & (1u8 << (offset % 8)) != 0
    }

    /// First seat id of the range.
    pub fn first_seat_id(&self) -> u64 {
        self.first_seat_id
    }

    /// Seats in the range.
    pub fn seat_count(&self) -> u32 {
        self.seat_count
    }

    /// Seats available.
    pub fn available(&self) -> u32 {
        self.available
    }

    /// The wire bitmap (see the type's documentation).
    pub fn bitmap(&self) -> &[u8] {
        &self.bits
    }

    /// Available seat ids, ascending.
    pub fn available_ids(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.seat_count as usize)
            .filter(|&offset| self.is_available_at(offset))
            .map(|offset| self.first_seat_id + offset as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsb_first_encoding() {
        let a = Availability::from_unavailable(100, 10, [101, 108]).unwrap();
        // Seats 100..=107 -> byte 0 with bit 1 clear; 108, 109 -> byte 1 bit 0 clear.
        assert_eq!(a.bitmap(), &[0b1111_1101, 0b0000_0010]);
        assert_eq!(a.available(), 8);
        assert!(!a.is_available(101));
        assert!(a.is_available(109));
        assert!(!a.is_available(110));
        assert!(!a.is_available(99));
    }

    #[test]
    fn refuses_bad_bitmaps() {
        assert!(matches!(
            Availability::from_bitmap(0, 10, &[0xff]),
            Err(AvailabilityError::WrongLength {
                expected: 2,
                actual: 1,
                ..
            })
        ));
        assert_eq!(
            Availability::from_bitmap(0, 10, &[0xff, 0b100]),
            Err(AvailabilityError::TrailingBits { seat_count: 10 })
        );
        assert!(matches!(
            Availability::from_unavailable(0, 10, [10]),
            Err(AvailabilityError::OutOfRange { seat_id: 10, .. })
        ));
        assert!(matches!(
            Availability::all_available(u64::MAX, 2),
            Err(AvailabilityError::RangeOverflow { .. })
        ));
    }

    #[test]
    fn empty_range() {
        let a = Availability::all_available(5, 0).unwrap();
        assert!(a.bitmap().is_empty());
        assert_eq!(a.available(), 0);
    }
}
