/**
 * The capacity gauges and backlogs, from `GET /stats` (docs/API.md, "Statistics"): records
 * (`capacity.records`), storage (`capacity.storage`), days of data (`current.days_of_data_stored`
 * of `configuration.retention_days`), the cloud upload backlog (`capacity.uploads_pending`), MQTT
 * (`mqtt`, hidden when null or absent), the scrub (`scrub`), and the latest cleanup (`last_cleanup`, hidden when null or
 * absent), damage in the log (`log_damage`, hidden when there is none), the disk writes (`disk_writes`: a day's bytes, per event, over
 * accepted, the one-time writes of start-up, of the store process and of the data directory's device), and a hub's pending messages
 * and lag (`hub`, hidden when not a hub).
 * Each gauge is a `<meter>` (0..100 percent) and a line of figures.
 */
import type { DiskWriteStats, HubStats, LastCleanup, LogDamageStats, MqttStats, ScrubStats, Stats } from './shapes.js';
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

/**
 * A hub's card (docs/OPERATIONS.md, "Hub mode"): the messages its consumer has not had
 * acknowledged, how far behind the fleet's stream it is, the newest message it imported, and
 * its counts since the start. Hidden when the store is not a hub.
 */
function renderHub(hub: HubStats | null | undefined): void {
  const card = element('#hub');
  card.hidden = hub === null || hub === undefined;
  if (!hub) return;
  element('#hub .figure').textContent = hub.pending_messages === null ? 'pending not read yet' : `${count.format(hub.pending_messages)} pending`;
  const lag = hub.lag_seconds === null ? 'lag not known yet' : `lag ${formatAge(hub.lag_seconds)}`;
  const newest = hub.newest_imported_at === null ? '' : `; newest imported ${formatMoment(hub.newest_imported_at)}`;
  const refused = hub.terminated > 0 ? `, ${count.format(hub.terminated)} refused` : '';
  element('#hub .note').textContent = `${lag}${newest}; ${count.format(hub.imported)} imported${refused}`;
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

/** What the page shows in a figure's place while the store measures (docs/OPERATIONS.md, "Disk writes"). */
const MEASURING = 'measuring';
/** The measurement's minimum, as /stats applies it (src/operations/disk-writes.ts). */
const MEASURE_MIN_MINUTES = 10;
const MEASURE_MIN_EVENTS = 1000;

/** Fills the `<dd>`s of a `<dl class="figures">` by their `data-figure` (a figure the list has no row for is left out). */
function fillFigures(list: HTMLElement, figures: Record<string, string>): void {
  for (const [name, text] of Object.entries(figures)) {
    const row = list.querySelector<HTMLElement>(`dd[data-figure="${name}"]`);
    if (row) row.textContent = text;
  }
}

/** One count's figures as the card's rows say them: `measuring` where /stats has none yet. */
function figureTexts(figures: { bytes_written: number; bytes_written_per_day: number | null; bytes_written_per_event: number | null; write_amplification: number | null }): Record<string, string> {
  return {
    'per-day': figures.bytes_written_per_day === null ? MEASURING : `${formatBytes(figures.bytes_written_per_day)}/day`,
    'per-event': figures.bytes_written_per_event === null ? MEASURING : formatBytes(figures.bytes_written_per_event),
    amplification: figures.write_amplification === null ? MEASURING : `${decimal.format(figures.write_amplification)}×`,
    total: formatBytes(figures.bytes_written),
  };
}

/** What the headline's note says: whose bytes a day, or how far the measurement is. */
function measurementNote(writes: DiskWriteStats, whose: string): string {
  if (!writes.measuring) return `${whose}, a day, over ${count.format(writes.measured_events)} events since ${formatMoment(writes.measured_since!)}`;
  const needs = `${MEASURE_MIN_MINUTES} min and ${count.format(MEASURE_MIN_EVENTS)} events`;
  if (writes.measured_since === null) return `${whose}: measuring from the first event after start-up, until ${needs}`;
  const minutes = Math.floor((Date.now() - Date.parse(writes.measured_since)) / 60_000);
  return `${whose}: measuring until ${needs} (so far ${minutes} min, ${count.format(writes.measured_events)} events)`;
}

/**
 * The disk writes card (docs/OPERATIONS.md, "Disk writes"): leads with the store's own bytes a day
 * (`/proc/self/io`, which other programs on the disk do not move), then its figures with labels:
 * per event, over what was accepted, the one-time writes of start-up, the bytes since the start.
 * No figure per day or per event is shown while /stats measures (its first 10 minutes and 1,000
 * events after start-up's own writes): "measuring" stands in its place. The data directory's
 * device follows where /stats has it, labelled as every writer on the disk, not only the store.
 * Hidden where the kernel reports neither count.
 */
function renderDiskWrites(writes: DiskWriteStats | null | undefined): void {
  const card = element('#disk-writes');
  const own = writes && writes.bytes_written !== null ? { ...writes, bytes_written: writes.bytes_written } : null;
  const device = writes?.device ?? null;
  card.hidden = !writes || (!own && !device);
  if (!writes || (!own && !device)) return;
  const deviceWhose = device ? `Device ${device.name}: every writer on the disk, not only the store` : '';
  const headline = own ?? device!;
  element('#disk-writes .figure').textContent = figureTexts(headline)['per-day'];
  element('#disk-writes .headline').textContent = measurementNote(writes, own ? 'The store\'s own writes' : deviceWhose);
  const ownList = element('#disk-writes dl.own');
  ownList.hidden = !own;
  if (own) fillFigures(ownList, { ...figureTexts(own), 'one-time': own.one_time_bytes_written === null ? '–' : formatBytes(own.one_time_bytes_written) });
  const deviceList = element('#disk-writes dl.device');
  deviceList.hidden = !device || !own;
  element('#disk-writes .device-label').hidden = !device || !own;
  if (device && own) {
    element('#disk-writes .device-label').textContent = deviceWhose;
    fillFigures(deviceList, figureTexts(device));
  }
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
  renderHub(stats.hub);
}
