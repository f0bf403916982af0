/* Dates as a person reads them: "Mon 11 Sep 2023", "week of 11 Sep 2023", "September 2023", "Yesterday".
 * Pure functions, no DOM and no server: window.LyraDates. A digest's period key (day 2023-09-11, ISO week
 * 2023-W37, month 2023-09) is already a calendar day in the person's time zone, so it is read as it is; a
 * stored time (UTC ISO text) is shown in the browser's time zone. */
"use strict";
(function () {
  const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
                  "October", "November", "December"];
  const SHORT = MONTHS.map((m) => m.slice(0, 3));
  const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

  /* A calendar day as {y, m (0-11), d, w (weekday 0-6)}, computed in UTC so no time zone shifts it. */
  function civil(y, m, d) {
    const at = new Date(Date.UTC(y, m, d));
    return { y: at.getUTCFullYear(), m: at.getUTCMonth(), d: at.getUTCDate(), w: at.getUTCDay() };
  }

  /* The Monday of ISO week `week` of `year`: ISO week 1 is the one holding 4 January. */
  function isoWeekMonday(year, week) {
    const jan4 = civil(year, 0, 4);
    return civil(year, 0, 4 - ((jan4.w + 6) % 7) + (week - 1) * 7);
  }

  const dayText = (c) => `${c.d} ${SHORT[c.m]} ${c.y}`;
  const fullDay = (c) => `${WEEKDAYS[c.w]} ${dayText(c)}`;

  /* A digest's period key as {granularity, first day}; null when it is no key. */
  function parsePeriod(period) {
    let m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(period);
    if (m) return { granularity: "day", first: civil(+m[1], +m[2] - 1, +m[3]) };
    m = /^(\d{4})-W(\d{2})$/.exec(period);
    if (m) return { granularity: "week", first: isoWeekMonday(+m[1], +m[2]) };
    m = /^(\d{4})-(\d{2})$/.exec(period);
    if (m) return { granularity: "month", first: civil(+m[1], +m[2] - 1, 1) };
    return null;
  }

  /* "2023-09-11" → "Mon 11 Sep 2023"; "2023-W37" → "week of 11 Sep 2023"; "2023-09" → "September 2023". */
  function periodLabel(period) {
    const p = parsePeriod(String(period));
    if (!p) return String(period);
    if (p.granularity === "day") return fullDay(p.first);
    if (p.granularity === "week") return `week of ${dayText(p.first)}`;
    return `${MONTHS[p.first.m]} ${p.first.y}`;
  }

  /* The month key ("2023-09") a period is filed under: a week under the month of its Monday. */
  function periodMonth(period) {
    const p = parsePeriod(String(period));
    return p ? `${p.first.y}-${String(p.first.m + 1).padStart(2, "0")}` : String(period);
  }

  /* The first day of a period as "YYYY-MM-DD", for sorting and for <time datetime>. */
  function periodStart(period) {
    const p = parsePeriod(String(period));
    if (!p) return String(period);
    return `${p.first.y}-${String(p.first.m + 1).padStart(2, "0")}-${String(p.first.d).padStart(2, "0")}`;
  }

  /* A stored time (UTC ISO text) as the day it was in the browser's time zone. */
  function localDay(stamp) {
    const at = new Date(stamp);
    return Number.isNaN(at.getTime()) ? null : civil(at.getFullYear(), at.getMonth(), at.getDate());
  }

  /* A stored time as its day: "Mon 11 Sep 2023". */
  function dayLabel(stamp) {
    const c = localDay(stamp);
    return c ? fullDay(c) : String(stamp || "");
  }

  /* From one stored time to another: "Mon 11 Sep 2023", "11–14 Sep 2023", "28 Aug – 2 Sep 2023". */
  function spanLabel(began, ended) {
    const a = localDay(began);
    const b = localDay(ended || began);
    if (!a || !b) return dayLabel(began || ended);
    if (a.y === b.y && a.m === b.m && a.d === b.d) return fullDay(a);
    if (a.y === b.y && a.m === b.m) return `${a.d}–${b.d} ${SHORT[a.m]} ${a.y}`;
    if (a.y === b.y) return `${a.d} ${SHORT[a.m]} – ${dayText(b)}`;
    return `${dayText(a)} – ${dayText(b)}`;
  }

  /* Whole days from a stored time's day to ``now``'s, in the browser's time zone (0 today, 1 yesterday). */
  function daysAgo(stamp, now = new Date()) {
    const c = localDay(stamp);
    if (!c) return null;
    return Math.round((Date.UTC(now.getFullYear(), now.getMonth(), now.getDate()) - Date.UTC(c.y, c.m, c.d)) / 86_400_000);
  }

  /* The group a conversation last active at ``stamp`` is listed under: "Today", "Yesterday",
   * "Previous 7 days", else its month ("September 2023"). */
  function recencyGroup(stamp, now = new Date()) {
    const ago = daysAgo(stamp, now);
    if (ago === null) return "Earlier";
    if (ago <= 0) return "Today";
    if (ago === 1) return "Yesterday";
    if (ago < 7) return "Previous 7 days";
    const c = localDay(stamp);
    return `${MONTHS[c.m]} ${c.y}`;
  }

  /* The heading of a day in a conversation: "Today", "Yesterday", else "Mon 11 Sep 2023". */
  function dayHeading(stamp, now = new Date()) {
    const ago = daysAgo(stamp, now);
    if (ago === 0) return "Today";
    if (ago === 1) return "Yesterday";
    return dayLabel(stamp);
  }

  /* A key equal for two stored times on the same day where the browser is ("2023-09-11"). */
  function dayKey(stamp) {
    const c = localDay(stamp);
    return c ? `${c.y}-${String(c.m + 1).padStart(2, "0")}-${String(c.d).padStart(2, "0")}` : "";
  }

  /* A stored time as the browser's clock says it ("14:05"), and whole ("Mon 11 Sep 2023, 14:05"). */
  function timeLabel(stamp) {
    const at = new Date(stamp);
    return Number.isNaN(at.getTime()) ? "" : at.toLocaleTimeString([], { hour: "numeric", minute: "2-digit" });
  }

  function momentLabel(stamp) {
    const time = timeLabel(stamp);
    return time ? `${dayLabel(stamp)}, ${time}` : String(stamp || "");
  }

  window.LyraDates = { periodLabel, periodMonth, periodStart, dayLabel, spanLabel, recencyGroup, dayHeading, dayKey,
                       timeLabel, momentLabel };
})();
