// Wall-clock times in a person's zone and the repeat rules the send form offers: pure
// functions of their inputs (the clock is a parameter), tested on their own.

const HOUR_MS = 3600 * 1000;

const clocks = new Map();
/** The wall clock of instant `ms` in `zone`: [year, month (1-12), day, hour, minute]. */
function wall(ms, zone) {
  let format = clocks.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone: zone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric",
    });
    clocks.set(zone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(new Date(ms)).map((p) => [p.type, Number(p.value)]));
  return [parts.year, parts.month, parts.day, parts.hour, parts.minute];
}

function offset(ms, zone) {
  const [y, mo, d, h, mi] = wall(ms, zone);
  return Date.UTC(y, mo - 1, d, h, mi) - Math.floor(ms / 60000) * 60000;
}

/**
 * The instant at which `zone`'s clocks read this date and time, by the service's
 * daylight-saving rule: a time that does not exist that day is shifted by the gap
 * (02:30 becomes 03:30), a time that exists twice is the first.
 */
export function atWallTime(year, month, day, hour, minute, zone) {
  const guess = Date.UTC(year, month - 1, day, hour, minute);
  const offsets = [offset(guess - 12 * HOUR_MS, zone), offset(guess + 12 * HOUR_MS, zone)];
  const fits = offsets
    .map((o) => guess - o)
    .filter((t) => wall(t, zone).join() === [year, month, day, hour, minute].join());
  return new Date(fits.length ? Math.min(...fits) : guess - Math.min(...offsets));
}

/** The next `hour`:00 in `zone` after `now` ("until tomorrow morning": 08:00). */
export function nextMorning(now, zone, hour = 8) {
  const [y, mo, d] = wall(now.getTime(), zone);
  const today = atWallTime(y, mo, d, hour, 0, zone);
  if (today > now) return today;
  const next = new Date(Date.UTC(y, mo - 1, d + 1));
  return atWallTime(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), hour, 0, zone);
}

/** A local date-time without offset, as schedules take it: "2026-11-27T08:00:00". */
export function localDateTime(date) {
  const pad = (n) => String(n).padStart(2, "0");
  const day = `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
  return `${day}T${pad(date.getHours())}:${pad(date.getMinutes())}:00`;
}

const DAYS = ["SU", "MO", "TU", "WE", "TH", "FR", "SA"];

/** The RRULE of a Repeat choice starting at `start` (null for Never or custom). */
export function repeatRule(choice, start) {
  if (choice === "daily") return "FREQ=DAILY";
  if (choice === "weekdays") return "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR";
  if (choice === "weekly") return `FREQ=WEEKLY;BYDAY=${DAYS[start.getDay()]}`;
  return null;
}

/**
 * The next `count` times of a Repeat choice from `start` (this browser's zone, its
 * wall-clock time kept across daylight saving), none before `now`.
 */
export function repeatTimes(choice, start, count = 5, now = start) {
  const step = choice === "weekly" ? 7 : 1;
  const times = [];
  for (let n = 0; times.length < count && n < 400; n += step) {
    const at = new Date(start.getFullYear(), start.getMonth(), start.getDate() + n, start.getHours(), start.getMinutes());
    const weekend = at.getDay() === 0 || at.getDay() === 6;
    if (at >= now && !(choice === "weekdays" && weekend)) times.push(at);
  }
  return times;
}
