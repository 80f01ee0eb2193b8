/** How the AWS SDK reports S3 errors. */
export function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}

export function isNotFound(error: unknown): boolean {
  const name = (error as { name?: string })?.name;
  return name === "NoSuchKey" || name === "NotFound" || (statusOf(error) === 404 && name !== "NoSuchBucket");
}
