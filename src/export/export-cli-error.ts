/**
 * Failures of `edge-events export` (docs/API.md, "Dataset export", "CLI"), with the exit code
 * the CLI ends with: 2 when the store refused the API key (401), 1 for everything else (a query
 * the store refused, a network failure, a broken download). The message is what the user reads.
 */
export class ExportCliError extends Error {
  constructor(message: string, readonly exitCode: 1 | 2, readonly hint: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ExportCliError';
  }
}
