// The little of Node the unit tests use (no @types/node dependency for one call).
declare module "node:child_process" {
  export function execFileSync(
    file: string,
    args: string[],
    options: { input?: string; env?: Record<string, string | undefined>; encoding: "utf8" },
  ): string;
}
declare const process: { env: Record<string, string | undefined> };
