/**
 * The capacity gauges and backlogs, from `GET /stats` (docs/API.md, "Statistics"): records
 * (`capacity.records`), storage (`capacity.storage`), days of data (`current.days_of_data_stored`
 * of `configuration.retention_days`), the cloud upload backlog (`capacity.uploads_pending`), MQTT
 * (`mqtt`, hidden when null or absent), the scrub (`scrub`), and the latest cleanup (`last_cleanup`, hidden when null or
 * absent), damage in the log (`log_damage`, hidden when there is none), and the disk writes (`disk_writes`: a day's bytes, per event, the write amplification, of
 * the store process and of the data directory's device).
 * Each gauge is a `<meter>` (0..100 percent) and a line of figures.
 */
import type { DiskWriteStats, LastCleanup, LogDamageStats, MqttStats, ScrubStats, Stats } from './shapes.js';
import { formatBytes } from './units.js';

const count = new Intl.NumberFormat('en');
const decimal = new Intl.NumberFormat('en', { maximumFractionDigits: 2 });
const timeOfDay = new Intl.DateTimeFormat('en-GB', { timeStyle: 'medium', hour12: false });
const dayAndTime = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', hour12: false });

/** A moment as the time of day when it is today, else with its day (`04:51:05`, `22 Nov, 23:10`). */
function formatMoment(iso: string): string {
  const moment = new Date(iso);
  return moment.toDateString() === new Date().toDateString() ? timeOfDay.format(moment) : dayAndTime.format(moment);
}

/** A duration in seconds, in ms below one second. */
const formatDuration = (seconds: number): string => (seconds < 1 ? `${Math.round(seconds * 1000)} ms` : `${decimal.format(seconds)} s`);

/** A duration in seconds, in the largest unit that keeps it readable (`45 s`, `12 min`, `3.5 h`). */
export function formatAge(seconds: number): string {
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${decimal.format(seconds / 3600)} h`;
  return `${decimal.format(seconds / 86_400)} days`;
}

function element<T extends HTMLElement = HTMLElement>(selector: string): T {
  const found = document.querySelector<T>(selector);
  if (!found) throw new Error(`the page has no ${selector}`);
  return found;
}

/** Sets a gauge: its meter to `percent` (the text says more than 100 when it is) and its figures. */
function setGauge(id: string, percent: number, figures: string): void {
  const meter = element<HTMLMeterElement>(`#${id} meter`);
  meter.value = percent;
  meter.dataset.percent = String(percent);
  element(`#${id} .gauge-value`).textContent = `${decimal.format(percent)}% · ${figures}`;
}

function renderMqtt(mqtt: MqttStats | null | undefined): void {
  const card = element('#mqtt');
  card.hidden = mqtt === null || mqtt === undefined;
  if (!mqtt) return;
  element('#mqtt .figure').textContent = mqtt.connected ? 'connected' : 'disconnected';
  card.classList.toggle('alarm', !mqtt.connected);
  const backlog = mqtt.oldest_unpublished_age_seconds === null ? 'nothing waiting' : `oldest unpublished ${formatAge(mqtt.oldest_unpublished_age_seconds)}`;
  const skipped = mqtt.changes_skipped > 0 ? `; ${count.format(mqtt.changes_skipped)} changes skipped` : '';
  const error = mqtt.last_error === null ? '' : `; ${mqtt.last_error}`;
  element('#mqtt .note').textContent = `${count.format(mqtt.published_total)} published; ${backlog}${skipped}${error}`;
}

/**
 * Damage in the segment log that start-up replays went past (docs/STORAGE.md, "Damage in the
 * log"): shown only when quarantine/ holds some, with the creates known lost and where the
 * newest range was found.
 */
function renderLogDamage(damage: LogDamageStats | undefined): void {
  const card = element('#log-damage');
  card.hidden = !damage || damage.quarantined_ranges === 0;
  if (!damage || damage.quarantined_ranges === 0) return;
  element('#log-damage .figure').textContent = `${count.format(damage.events_lost)} events lost`;
  const newest = damage.recent[0];
  const where = newest ? `; newest in segment ${newest.segment} at byte ${count.format(newest.offset)}, found ${formatMoment(newest.found_at)}` : '';
  element('#log-damage .note').textContent = `${count.format(damage.quarantined_ranges)} damaged ranges (${formatBytes(damage.quarantined_bytes)}) moved to quarantine/${where}`;
}

/** The scrub's card: its passes, and what it found; an alarm while anything could not be mended. */
function renderScrub(scrub: ScrubStats | undefined): void {
  const card = element('#scrub');
  card.hidden = scrub === undefined;
  if (!scrub) return;
  card.classList.toggle('alarm', scrub.unrepairable > 0);
  const last = scrub.last_pass_at === null ? 'first pass under way' : `last pass ${formatMoment(scrub.last_pass_at)}`;
  element('#scrub .figure').textContent = scrub.damaged === 0 ? 'No damage found' : `${count.format(scrub.repaired)} repaired, ${count.format(scrub.unrepairable)} unrepairable`;
  const newest = scrub.recent[0];
  const finding = newest ? `; newest: ${newest.detail} (${newest.file}, ${formatMoment(newest.at)})` : '';
  element('#scrub .note').textContent = `${count.format(scrub.passes)} passes of ${scrub.pass_hours} h, ${last}; ${formatBytes(scrub.verified_bytes)} read${finding}`;
}

function renderCleanup(cleanup: LastCleanup | null | undefined): void {
  const card = element('#last-cleanup');
  card.hidden = cleanup === null || cleanup === undefined;
  if (!cleanup) return;
  const finished = element<HTMLTimeElement>('#last-cleanup time');
  finished.dateTime = cleanup.finished_at;
  finished.textContent = formatMoment(cleanup.finished_at);
  element('#last-cleanup .note').textContent = `${cleanup.trigger.toLowerCase()}: ${count.format(cleanup.records_deleted)} records, `
    + `${count.format(cleanup.files_deleted)} files deleted; ${formatBytes(cleanup.bytes_freed)} freed in ${formatDuration(cleanup.duration_seconds)}`;
}

/** Per event and the write amplification, as a card's note says them. */
function perEventAndAmplification(figures: { bytes_written_per_event: number | null; write_amplification: number | null }): string {
  const perEvent = figures.bytes_written_per_event === null ? 'no event yet' : `${formatBytes(figures.bytes_written_per_event)} per event`;
  return figures.write_amplification === null ? perEvent : `${perEvent}, ${decimal.format(figures.write_amplification)}× what was accepted`;
}

/** Bytes a day where /stats has them (after the store's first 10 minutes), else the bytes since the start. */
function amountWritten(figures: { bytes_written: number; bytes_written_per_day: number | null }): string {
  return figures.bytes_written_per_day === null ? `${formatBytes(figures.bytes_written)} since the start` : `${formatBytes(figures.bytes_written_per_day)}/day`;
}

/**
 * Bytes written a day (the flash's wear), per event, and the write amplification. The headline is
 * the store's own count (`/proc/self/io`), which other programs on the disk do not move; the data
 * directory's device follows where /stats has it, labelled as every writer on it (a disk the box
 * shares counts the others' writes too). In the first 10 minutes /stats gives no day's figure, and
 * the card shows the bytes since the start (docs/OPERATIONS.md, "Disk writes"). Hidden where the
 * kernel reports neither.
 */
function renderDiskWrites(writes: DiskWriteStats | null | undefined): void {
  const card = element('#disk-writes');
  const own = writes && writes.bytes_written !== null ? { ...writes, bytes_written: writes.bytes_written } : null;
  const device = writes?.device ?? null;
  const headline = own ?? device;
  card.hidden = !headline;
  if (!headline) return;
  element('#disk-writes .figure').textContent = amountWritten(headline);
  const whose = own ? 'The store\'s own writes: ' : `Device ${device!.name}, every writer on it: `;
  const total = headline.bytes_written_per_day === null ? 'bytes a day after the first 10 minutes' : `${formatBytes(headline.bytes_written)} since the start`;
  element('#disk-writes .summary').textContent = `${whose}${perEventAndAmplification(headline)}; ${total}`;
  const deviceNote = element('#disk-writes .device');
  deviceNote.hidden = !device || !own;
  if (device && own) deviceNote.textContent = `Device ${device.name}, every writer on it: ${amountWritten(device)}, ${perEventAndAmplification(device)}`;
}

/** Shows `stats` in the page's gauges and cards. */
export function renderStats(stats: Stats): void {
  const { records, storage } = stats.capacity;
  setGauge('gauge-records', records.percent_used, `${count.format(records.used)} of ${count.format(records.limit)}`);
  setGauge('gauge-storage', storage.percent_used, `${storage.bytes_used_formatted} of ${storage.bytes_limit_formatted}`);
  const days = stats.current.days_of_data_stored;
  const retention = stats.configuration.retention_days;
  // A retention under a day reads in hours: "0 of 0 days" said nothing.
  const [amount, unit] = retention < 1 ? [(d: number) => d * 24, 'hours'] as const : [(d: number) => d, 'days'] as const;
  setGauge('gauge-days', Number(((100 * days) / retention).toFixed(2)), `${decimal.format(amount(days))} of ${decimal.format(amount(retention))} ${unit}`);
  element('#uploads-pending').textContent = count.format(stats.capacity.uploads_pending);
  element('#blocked').hidden = !stats.capacity.blocked;
  renderMqtt(stats.mqtt);
  renderCleanup(stats.last_cleanup);
  renderLogDamage(stats.log_damage);
  renderScrub(stats.scrub);
  renderDiskWrites(stats.disk_writes);
}
