/**
 * Text a server sent, made safe to print on a terminal (docs/SECURITY.md, "A store or search
 * server the CLI talks to"): the CLIs print event fields, cursors, result cells and error details
 * that come from a server, and a control character there is an instruction to the terminal, not
 * text (ECMA-48: ESC starts a sequence, `ESC ] 0 ; title BEL` sets the window title, OSC 52 writes
 * the clipboard, a C1 CSI `U+009B` starts a sequence on terminals that take 8-bit controls). Every
 * C0 control (U+0000-U+001F), DEL (U+007F) and C1 control (U+0080-U+009F) is shown as a visible
 * escape instead, `\x1b` for ESC. So is every bidirectional formatting character (Unicode UAX #9:
 * U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), `\u202e` for RLO: printed raw, they reorder
 * the text around them, so a line shows other than what it holds ("Trojan Source", CVE-2021-42574).
 * Imports nothing of `src/`: the store's client, the export and the search CLI share it.
 */

/** The bidirectional formatting characters (UAX #9): ALM, LRM, RLM, LRE..RLO, LRI..PDI, as a character-class body. */
const BIDI = '\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069';
/** C0 controls, DEL and C1 controls (ECMA-48, section 5), and the bidirectional ones. */
const CONTROLS = new RegExp(`[\\u0000-\\u001f\\u007f-\\u009f${BIDI}]`, 'g');
/** The same, but a line feed is left as it is (a caret under a query's bad column). */
const CONTROLS_BUT_LINE_FEED = new RegExp(`[\\u0000-\\u0009\\u000b-\\u001f\\u007f-\\u009f${BIDI}]`, 'g');
/** What JSON.stringify leaves raw of them: DEL, C1 and the bidirectional ones (it escapes C0 itself, RFC 8259, section 7). */
const JSON_RAW_CONTROLS = new RegExp(`[\\u007f-\\u009f${BIDI}]`, 'g');

const hex = (char: string, digits: number): string => char.charCodeAt(0).toString(16).padStart(digits, '0');

/** `\xHH` for a character below U+0100, `\uHHHH` above. */
const escaped = (char: string): string => (char.charCodeAt(0) < 0x100 ? `\\x${hex(char, 2)}` : `\\u${hex(char, 4)}`);

/**
 * `text` with each control character shown as `\xHH` (two lower-case hex digits) and each
 * bidirectional one as `\uHHHH`: ESC becomes `\x1b`, a line feed `\x0a`, U+009B `\x9b`, U+202E
 * `\u202e`. Other characters, backslashes included, are kept.
 * @param options.lines keep line feeds (for multi-line messages: an error detail and its caret)
 */
export function visibleControls(text: string, options: { lines?: boolean } = {}): string {
  return text.replace(options.lines === true ? CONTROLS_BUT_LINE_FEED : CONTROLS, escaped);
}

/**
 * `JSON.stringify(value)` with no control character left raw in it: JSON.stringify escapes C0
 * controls (`\u001b`) but writes DEL, C1 and bidirectional controls as they are; they become
 * `\u007f`, `\u009b`, `\u202e`.
 * The same JSON value, safe to print.
 * @throws TypeError as JSON.stringify does (a cycle, a BigInt)
 */
export function terminalJson(value: unknown): string {
  return JSON.stringify(value).replace(JSON_RAW_CONTROLS, (char) => `\\u${hex(char, 4)}`);
}
