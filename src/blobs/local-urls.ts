import type { UrlTokens } from "../security/url-tokens.js";
import type { DownloadUrlOptions, PresignedRequest, UploadUrlOptions } from "./port.js";

export interface UploadClaims {
  op: "put";
  key: string;
  size: number;
  ct: string;
  exp: number;
}

export interface DownloadClaims {
  op: "get";
  key: string;
  fn: string;
  ct: string;
  exp: number;
}

/**
 * URLs of this service that stand in for S3 presigned URLs when blobs live on the local
 * filesystem: `PUT /v1/uploads/{token}` and `GET /v1/files/{token}`, each token a signed capability.
 */
export class LocalBlobUrls {
  constructor(
    private readonly tokens: UrlTokens,
    private readonly publicBaseUrl: string,
  ) {}

  upload(key: string, options: UploadUrlOptions): PresignedRequest {
    const claims: UploadClaims = {
      op: "put",
      key,
      size: options.size,
      ct: options.contentType,
      exp: options.expiresAt.getTime(),
    };
    const url = `${this.publicBaseUrl}/v1/uploads/${this.tokens.sign(claims)}`;
    return { url, method: "PUT", headers: { "content-type": options.contentType }, resumableUrl: url };
  }

  download(key: string, options: DownloadUrlOptions): string {
    const claims: DownloadClaims = {
      op: "get",
      key,
      fn: options.fileName,
      ct: options.contentType,
      exp: options.expiresAt.getTime(),
    };
    return `${this.publicBaseUrl}/v1/files/${this.tokens.sign(claims)}`;
  }

  uploadClaims(token: string, now: Date): UploadClaims | null {
    const claims = this.tokens.verify<UploadClaims>(token, now);
    return claims?.op === "put" ? claims : null;
  }

  /**
   * The claims of a genuine upload token, expired or not (a tus client is told 410 for an expired
   * upload, 404 for one that never was); null when forged or not an upload token.
   */
  uploadClaimsEvenExpired(token: string): UploadClaims | null {
    const claims = this.tokens.verify<UploadClaims>(token, new Date(0));
    return claims?.op === "put" ? claims : null;
  }

  downloadClaims(token: string, now: Date): DownloadClaims | null {
    const claims = this.tokens.verify<DownloadClaims>(token, now);
    return claims?.op === "get" ? claims : null;
  }
}
