/**
 * Characters that are not for showing, in text that users give and others read (a key name, an
 * SMS sender name, a bouncer's User-Agent): control characters (`\p{Cc}`: C0, DEL and C1, whose
 * U+009B is an 8-bit CSI that many terminals act on), the bidirectional formatting controls
 * (embeddings, overrides, isolates and marks, which reorder what is shown around them), and the
 * line and paragraph separators. One rule: labels refuse them, the CLI escapes them.
 */
const UNPRINTABLE_CLASS = '[\\p{Cc}\\u061C\\u200E\\u200F\\u202A-\\u202E\\u2066-\\u2069\\u2028\\u2029]';
const UNPRINTABLE = new RegExp(UNPRINTABLE_CLASS, 'u');
const EVERY_UNPRINTABLE = new RegExp(UNPRINTABLE_CLASS, 'gu');

/** One line of printable characters: no control, bidi control or line separator in it. */
export function isPrintableLine(text: string): boolean {
  return !UNPRINTABLE.test(text);
}

/** `text` without its unprintable characters (for a label stored before the rule held). */
export function withoutUnprintable(text: string): string {
  return text.replace(EVERY_UNPRINTABLE, '');
}

/**
 * `text` as a terminal may print it: every unprintable character as an escape (`\x9b`,
 * `\u202e`, `\t`), except the line feeds in `keep` (the lines of a table). What a user gave can
 * then neither move the cursor, recolour, clear the screen nor reorder the line it is on.
 */
export function escapeUnprintable(text: string, keep: readonly string[] = ['\n']): string {
  return text.replace(EVERY_UNPRINTABLE, (c) => {
    if (keep.includes(c)) return c;
    if (c === '\t') return '\\t';
    if (c === '\r') return '\\r';
    if (c === '\n') return '\\n';
    const code = c.codePointAt(0)!;
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/**
 * `value` as JSON a terminal may print: the same JSON (it parses to the same value), with every
 * unprintable character that JSON.stringify leaves raw (C1, DEL, bidi controls) as `\uXXXX`.
 */
export function printableJson(value: unknown): string {
  return JSON.stringify(value).replace(EVERY_UNPRINTABLE, (c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, '0')}`);
}
