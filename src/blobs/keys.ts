/** Where a transfer's file lives in the blob store. */
export const blobKey = (transferId: string, fileId: string) => `transfers/${transferId}/${fileId}`;
