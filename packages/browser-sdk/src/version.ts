/** The SDK's version, sent in the announce (sdk.md §2); a test keeps it equal to package.json's. */
export const SDK_VERSION = '0.1.0'
