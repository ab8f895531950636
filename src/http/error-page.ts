/**
 * An error as a small HTML page, for the routes a person opens in a browser (the operator page's
 * HTML, `errorShape: 'page'`): a 421 under a name not in ALLOWED_HOSTS then says so in the
 * browser instead of a JSON body (docs/SECURITY.md, "A web page opened on the LAN").
 */
import { errorRegistry, type AppError } from '../errors.js';

/** What CSP lets the error page do: nothing but show its text. */
export const ERROR_PAGE_POLICY = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (char) => ESCAPES[char]);

/**
 * The HTML document of `error`: its status and registered message as the title, its detail (a
 * string detail, else the message) as the text, every string escaped.
 * @returns the document as UTF-8 text
 */
export function errorPage(error: AppError): string {
  const title = `${error.status} ${errorRegistry[error.code].message}`;
  const detail = typeof error.detail === 'string' ? error.detail : title;
  return '<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8"><title>' + escapeHtml(title) + '</title></head>\n'
    + '<body>\n<h1>' + escapeHtml(title) + '</h1>\n<p id="error-detail">' + escapeHtml(detail) + '</p>\n</body>\n</html>\n';
}
