// A bad value as a message echoes it: cut to ECHO_MAX characters with an ellipsis, so that a 10,000-character value
// stays a short line. The one place the page cuts one (Python's is flashviz.model.echo; tests/test_fields.py greps
// that no other module slices a shown value), and says what a check got (`got`).

export const ECHO_MAX = 40;

/** `text` when it has at most `limit` characters, else its first `limit - 1` and an ellipsis. */
export function cut(text: string, limit = ECHO_MAX): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}\u2026`;
}

/** A value as a check's message shows it: short values as JSON writes them, long ones by their type. */
export function got(v: unknown): string {
  if (v === undefined) return "nothing";
  if (Array.isArray(v)) return v.length > 3 ? `a list of ${v.length}` : cut(JSON.stringify(v) ?? "a list");
  if (typeof v === "object" && v !== null) return "an object";
  return cut(JSON.stringify(v) ?? String(v));
}
