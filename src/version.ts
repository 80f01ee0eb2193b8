/** The `handoff` command's version, as in the root package.json (a test keeps them equal). */
export const HANDOFF_VERSION = "0.1.0";
