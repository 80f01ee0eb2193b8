/** The SDK's version, as in its package.json (a test keeps them equal). */
export const SDK_VERSION = "0.1.0";
