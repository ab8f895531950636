/**
 * Failures of `edge-events export` of its own (docs/API.md, "Dataset export", "CLI"): an output
 * path refused before the download (output-checks.ts, extract-target.ts), a download that ends
 * before a complete zip, a failed write or extraction; exit code 1. The store's refusals and a
 * store that does not answer are the client's (src/client/store-failure.ts).
 */
export class ExportCliError extends Error {
  constructor(message: string, readonly exitCode: 1, readonly hint: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ExportCliError';
  }
}
