//! The `Expires` attribute's date, read by RFC 6265 §5.1.1's algorithm (what browsers
//! do, far more lenient than the "sane-cookie-date" servers are asked to send): the
//! value is cut into tokens at delimiters, and the first token that looks like a time,
//! a day of the month, a month and a year gives each — so `Wed, 21 Oct 2015 07:28:00
//! GMT`, `Wednesday, 21-Oct-15 07:28:00 GMT` (RFC 850) and `Wed Oct 21 07:28:00 2015`
//! (asctime) all read the same. The zone is ignored: cookie dates are in UTC.

/// Unix seconds of a cookie date; None when §5.1.1 says to ignore the attribute.
pub fn parse(text: &str) -> Option<i64> {
    let (mut time, mut day, mut month, mut year) = (None, None, None, None);
    for token in text.split(is_delimiter).filter(|t| !t.is_empty()) {
        // §5.1.1 step 2: each token fills the first field it matches, in this order.
        if time.is_none()
            && let Some(t) = hms(token)
        {
            time = Some(t);
        } else if day.is_none()
            && let Some(d) = digits_then_rest(token, 1, 2)
        {
            day = Some(d);
        } else if month.is_none()
            && let Some(m) = month_of(token)
        {
            month = Some(m);
        } else if year.is_none()
            && let Some(y) = digits_then_rest(token, 2, 4)
        {
            year = Some(y);
        }
    }
    let ((hour, minute, second), day, month, mut year) = (time?, day?, month?, year?);
    // Step 3 and 4: two-digit years.
    if (70..=99).contains(&year) {
        year += 1900;
    } else if year <= 69 {
        year += 2000;
    }
    // Step 5: out-of-range fields make the whole date ignored.
    if !(1..=31).contains(&day) || year < 1601 || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    // Step 6: a date that does not exist (30 February) is ignored too.
    if day > days_in_month(year, month) {
        return None;
    }
    let days = days_from_civil(i64::from(year), month, i64::from(day));
    Some(days * 86_400 + i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second))
}

/// delimiter = %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E
fn is_delimiter(c: char) -> bool {
    matches!(c, '\t' | '\x20'..='\x2f' | '\x3b'..='\x40' | '\x5b'..='\x60' | '\x7b'..='\x7e')
}

/// `min`..=`max` digits, then nothing or a non-digit and anything (day-of-month, year).
fn digits_then_rest(token: &str, min: usize, max: usize) -> Option<u32> {
    let n = token.bytes().take_while(u8::is_ascii_digit).count();
    if !(min..=max).contains(&n) {
        return None;
    }
    token[..n].parse().ok()
}

/// hms-time = time-field ":" time-field ":" time-field, then nothing or a non-digit.
fn hms(token: &str) -> Option<(u32, u32, u32)> {
    let mut parts = token.splitn(3, ':');
    let field = |p: &str| -> Option<u32> { (1..=2).contains(&p.len()).then(|| p.parse().ok()).flatten() };
    let hour = field(parts.next()?)?;
    let minute = field(parts.next()?)?;
    let last = parts.next()?;
    let n = last.bytes().take_while(u8::is_ascii_digit).count();
    let second = field(&last[..n])?;
    Some((hour, minute, second))
}

/// month = ( "jan" / "feb" / … / "dec" ) *OCTET, case-insensitively.
fn month_of(token: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    let head = token.get(..3)?;
    MONTHS.iter().position(|m| m.eq_ignore_ascii_case(head)).map(|i| i as u32 + 1)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`, chrono-Compatible Low-Level Date Algorithms).
fn days_from_civil(year: i64, month: u32, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2015-10-21 07:28:00 UTC.
    const T: i64 = 1_445_412_480;

    #[test]
    fn the_three_http_date_forms_read_alike() {
        assert_eq!(parse("Wed, 21 Oct 2015 07:28:00 GMT"), Some(T));
        assert_eq!(parse("Wednesday, 21-Oct-15 07:28:00 GMT"), Some(T));
        assert_eq!(parse("Wed Oct 21 07:28:00 2015"), Some(T));
        // PHP's setcookie() writes this form.
        assert_eq!(parse("Wed, 21-Oct-2015 07:28:00 GMT"), Some(T));
    }

    #[test]
    fn epoch_and_two_digit_years() {
        assert_eq!(parse("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(parse("Thu, 01-Jan-70 00:00:01 GMT"), Some(1));
        assert_eq!(parse("Sat, 01 Jan 2000 00:00:00 GMT"), Some(946_684_800));
        assert_eq!(parse("01 Jan 00 00:00:00"), Some(946_684_800), "00 is 2000");
        assert_eq!(parse("Fri, 31 Dec 1999 23:59:59 GMT"), Some(946_684_799));
    }

    #[test]
    fn dates_that_must_be_ignored() {
        assert_eq!(parse(""), None);
        assert_eq!(parse("tomorrow"), None);
        assert_eq!(parse("Wed, 21 Oct 2015"), None, "no time");
        assert_eq!(parse("Wed, 32 Oct 2015 07:28:00 GMT"), None, "day 32");
        assert_eq!(parse("Mon, 30 Feb 2015 07:28:00 GMT"), None, "no such day");
        assert_eq!(parse("Wed, 21 Oct 2015 24:00:00 GMT"), None, "hour 24");
        assert_eq!(parse("Wed, 21 Oct 1600 07:28:00 GMT"), None, "before 1601");
        assert_eq!(parse("Wed, 21 Foo 2015 07:28:00 GMT"), None, "no month");
    }

    #[test]
    fn leap_days() {
        assert!(parse("29 Feb 2016 00:00:00").is_some());
        assert!(parse("29 Feb 2015 00:00:00").is_none());
        assert!(parse("29 Feb 2000 00:00:00").is_some());
        assert!(parse("29 Feb 2100 00:00:00").is_none());
    }
}
