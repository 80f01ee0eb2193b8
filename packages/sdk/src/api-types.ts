// Generated from docs/openapi.json by `npm run contract` (openapi-typescript): do not edit.
// The contract lives in src/contract/; a test fails when this file drifts from it.

export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** 200 while the process answers */
        get: operations["getHealth"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** 200 when every store answers, the blob disk has room and the projections are caught up; `degraded` names what runs in a fallback */
        get: operations["getReadiness"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/signup": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create a person's account; a verification link goes to the address */
        post: operations["signUp"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/verify": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Confirm the address with the token of the verification link (single use, 24 h) */
        post: operations["verifyEmail"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/login": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Start a 12-hour session (Bearer token) with e-mail and password */
        post: operations["logIn"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/logout": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** End the caller's session at once */
        post: operations["logOut"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/session": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The account of the caller's session (for the web app) */
        get: operations["getSession"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/receiving-key": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The person's receiving public key and how it is derived; 404 when none is set */
        get: operations["getReceivingKey"];
        /** Set (or rotate) the person's receiving public key; held transfers activate */
        put: operations["setReceivingKey"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/account": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Who the caller is: the account, its plan's limits and the credential (needs no agent) */
        get: operations["getAccount"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/mail-delivery": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Whether e-mail to people goes out through SMTP or stays in the server's outbox folder */
        get: operations["getMailDelivery"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/resend-verification": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Send a new verification link (earlier ones stop working); the same 202 for any address */
        post: operations["resendVerification"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/forgot-password": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Mail a password-reset link (single use, 1 h); the same 202 for any address */
        post: operations["forgotPassword"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/reset-password": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Set a new login password with the reset link's token; every session of the account ends */
        post: operations["resetPassword"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/password": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /** Change the login password (the current one required); the account's other sessions end */
        put: operations["changePassword"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/register": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Register an agent (one-shot with public_key, two-step without) */
        post: operations["registerAgent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/connect": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Complete the two-step registration with the one-time connection token */
        post: operations["connectAgent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the agents of the caller's account */
        get: operations["listAgents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get one agent, with its public keys */
        get: operations["getAgent"];
        put?: never;
        post?: never;
        /** Disconnect an agent; its slug is free for a re-registration (key rotation) */
        delete: operations["disconnectAgent"];
        options?: never;
        head?: never;
        /** Change an agent's profile; only the fields present change, keys never */
        patch: operations["updateAgent"];
        trace?: never;
    };
    "/v1/agents/{id}/webhook-secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Rotate an agent's webhook secret; the old one keeps signing for 24 hours */
        post: operations["rotateWebhookSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{id}/webhook-test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Send a webhook.test message to an agent's endpoint */
        post: operations["testWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{id}/webhook-deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** An agent's webhook messages and every attempt, newest first */
        get: operations["listWebhookDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{id}/webhook-deliveries/{message_id}/redeliver": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Send a message again: same id and body, one more attempt */
        post: operations["redeliverWebhookMessage"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sendable": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Agents the caller may send to: its own first, then those of connected accounts */
        get: operations["listSendableAgents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/resolve": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * An agent's public keys by slug or UUID: own agents, or those of connected accounts
         * @description With an e-mail address, a person's receiving key, when the caller is connected with them or has sent to them before. Several agents of that slug on connected accounts: 400 AMBIGUOUS_RECIPIENT with `candidates`.
         */
        get: operations["resolveAgent"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/me": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The startup profile of the calling agent (X-Service-Agent, else the first connected one) */
        get: operations["getProfile"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/api-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The caller's account's API keys in use (never the keys themselves), oldest first */
        get: operations["listApiKeys"];
        put?: never;
        /** Create an API key on the caller's account */
        post: operations["createApiKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/accounts/{account_id}/api-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create an API key on an account (the caller's own) */
        post: operations["createAccountApiKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/accounts/{account_id}/api-keys/{key_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Revoke an API key: its next use answers 401 */
        delete: operations["revokeApiKey"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/connections": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The caller's connections, newest first, with their status */
        get: operations["listConnections"];
        put?: never;
        /** Invite another account (by e-mail or UUID) to connect */
        post: operations["requestConnection"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/connections/{id}/accept": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Accept an invitation (the invited account only) */
        post: operations["acceptConnection"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/connections/{id}/decline": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Decline an invitation (the invited account only) */
        post: operations["declineConnection"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/connections/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** End a connection (either side); cross-account sends stop at once */
        delete: operations["revokeConnection"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/transfers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Transfers sent or received by the caller's account, newest first */
        get: operations["listTransfers"];
        put?: never;
        /** Send files (multipart/form-data, streamed; one `files` part per file) */
        post: operations["sendTransfer"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/transfers/presigned": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create a transfer whose files the client uploads straight to storage */
        post: operations["createPresignedTransfer"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/transfers/{id}/confirm": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Activate a presigned transfer once every file is uploaded with its declared size */
        post: operations["confirmTransfer"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/transfers/inbox": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Incoming pending and active transfers of an agent, with long-poll (`wait`) */
        get: operations["getInbox"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/transfers/inbox/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The inbox as server-sent events: `transfer.received` for each transfer as it arrives
         * @description Each incoming transfer is one event: `event: transfer.received`, `id:` its position in the inbox, `data:` the inbox item (a Transfer, as `GET /v1/transfers/inbox` lists it), sent within 100 ms of its creation through any instance. A `: keep-alive` comment comes every 15 s. Without a position the stream starts with what the inbox holds; `Last-Event-ID` (as EventSource sends it on reconnecting) or `after` replays what came after that position. An event's `id` and a page's `next_cursor` are the same kind of position, so a client moves between this stream and the long-poll without missing a transfer. An API key holds a limited number of streams open at once on an instance (docs/api.md, rate limits): one more answers 429 `RATE_LIMITED` with `Retry-After` until one of them closes.
         */
        get: operations["streamInbox"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/transfers/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Status and metadata of a transfer (never changes the download counter) */
        get: operations["getTransfer"];
        put?: never;
        post?: never;
        /** Delete a transfer: its file data goes, its history stays */
        delete: operations["deleteTransfer"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/transfers/{id}/download": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Count one download and get signed download URLs (15 minutes, Range supported)
         * @description Uses up one of the transfer's `max_downloads`; the last one deletes the files when `auto_delete`.
         */
        get: operations["downloadTransfer"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/uploads/{token}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /** Upload one file of a presigned transfer (signed link, no Authorization) */
        put: operations["uploadFile"];
        post?: never;
        /** tus termination: remove the upload (until confirm); confirm then names the file as missing */
        delete: operations["terminateUpload"];
        /** tus: what this upload resource supports */
        options: operations["getUploadOptions"];
        /** tus: how many bytes are stored (the offset to resume from), the length and the expiry */
        head: operations["getUploadOffset"];
        /**
         * tus: append bytes at Upload-Offset
         * @description Bytes acknowledged by the 204 survive a crash or restart of the service. Refused: another content type (415), past the declared size (413).
         */
        patch: operations["appendUpload"];
        trace?: never;
    };
    "/v1/files/{token}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Download one file (signed link from the download endpoint, honours Range) */
        get: operations["downloadFile"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/requests": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The account's request links, newest first (never their tokens) */
        get: operations["listRequests"];
        put?: never;
        /** Create a request link: anyone holding it can send the agent files, encrypted to its key */
        post: operations["createRequest"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/requests/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One request link (never its token) */
        get: operations["getRequest"];
        put?: never;
        post?: never;
        /** Revoke a request link: it answers 410 REQUEST_CLOSED from now on */
        delete: operations["revokeRequest"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/requests/by-token/{token}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** What a request link asks for, and the agent key to encrypt to (the token is the credential) */
        get: operations["getRequestByToken"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/requests/by-token/{token}/transfers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Declare encrypted files for a request link; limits are checked before any byte */
        post: operations["sendToRequest"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/requests/by-token/{token}/transfers/{transfer_id}/confirm": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Activate a transfer sent through a request link once its files are stored; counts one use */
        post: operations["confirmRequestTransfer"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/transfers/{id}/receipts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A transfer's recorded receipts, for either party */
        get: operations["listReceipts"];
        put?: never;
        /**
         * The recipient agent's signed receipt of a transfer it received (X-Service-Agent picks the agent)
         * @description Checked against the agent's current signing key, the transfer's recipient and the stored bytes' hashes: 400 RECEIPT_INVALID otherwise (403 for another account's agent), nothing recorded.
         */
        post: operations["postReceipt"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/transfers/{id}/history": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A transfer's history in log order: creation, every download, expiry, purge, deletion */
        get: operations["getTransferHistory"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{id}/history": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** An agent's history in log order: its own life and the transfers it sent, received or downloaded */
        get: operations["getAgentHistory"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/audit": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The caller's account's audit feed: every event of the streams it owns or takes part in */
        get: operations["getAudit"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/reports/compliance": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The account's compliance report for a month (JSON, or CSV with Accept: text/csv) */
        get: operations["getComplianceReport"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/log/key": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The log's origin and public key, and its signed-note verifier key */
        get: operations["getLogKey"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/log/checkpoint": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The newest signed checkpoint, or the one of `tree_size` exactly as it was first served */
        get: operations["getLogCheckpoint"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/log/entries/{position}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The leaf of an event the caller's account may see (decisions 6.3) */
        get: operations["getLogEntry"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/log/proof/inclusion": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The audit path of a leaf in a signed tree: hashes only, no other account's content */
        get: operations["getInclusionProof"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/log/proof/consistency": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The proof that a signed tree extends an earlier one */
        get: operations["getConsistencyProof"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/audit/export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The account's entries with their proofs against one checkpoint, to verify offline (decisions 9.7) */
        get: operations["getAuditExport"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/broadcasts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Publish a broadcast to every live agent, or to the agents named */
        post: operations["publishBroadcast"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/broadcasts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The calling agent's unread broadcasts, newest first */
        get: operations["listBroadcasts"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/broadcasts/{id}/read": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /** Burn a broadcast for the calling agent: it leaves that agent's unread list for good */
        put: operations["markBroadcastRead"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/accounts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create an account and its first API key */
        post: operations["createAccount"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/accounts/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /** Change an account's plan */
        patch: operations["changePlan"];
        trace?: never;
    };
    "/v1/admin/accounts/{id}/erase": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Erase an account's personal data by destroying its data key (crypto-shredding) */
        post: operations["eraseAccount"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/erasures": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Erase a person's personal data by e-mail address (with their account, when they have one) */
        post: operations["erasePerson"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/clock": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Move the service clock forward (TEST_CLOCK=1 only) */
        post: operations["advanceClock"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description An account (decisions 2 and 4.1) */
        Account: {
            /** Format: uuid */
            id: string;
            email: string;
            name: string;
            plan: string;
            /** @enum {string} */
            kind: "human" | "agent";
            /** @description A person's account only */
            email_verified?: boolean;
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            created_at: string;
        };
        /** @description An account */
        AccountAnswer: {
            account: components["schemas"]["Account"];
        };
        /**
         * @description A new account
         * @example {
         *       "email": "ops@example.com",
         *       "plan": "free"
         *     }
         */
        AccountCreation: {
            /** Format: email */
            email: string;
            name?: string;
            /** @default free */
            plan?: components["schemas"]["Plan"];
        };
        /**
         * @description Who caused an event (decisions 6.1)
         * @enum {string}
         */
        ActorKind: "api_key" | "session" | "connection_token" | "admin" | "system" | "signed_url";
        /** @description An agent with its public keys (spec 2.1) and the log's proof of them (decisions 9.6) */
        Agent: {
            /** Format: uuid */
            id: string;
            /** @description The agent's slug, unique on its account */
            agent_id: string;
            name: string | null;
            description: string | null;
            webhook_url: string | null;
            /** @description null while no webhook_url is set; `disabled` after 3 days of failures (decisions 8.3) */
            webhook_status: ("active" | "disabled") | null;
            agent_type: string;
            /** @enum {string} */
            connection_status: "pending" | "connected" | "disconnected";
            /** @description Absent while the agent is pending */
            public_key?: string;
            /** @constant */
            public_key_algorithm: "X25519";
            signing_public_key: string | null;
            /** @constant */
            signing_key_algorithm: "Ed25519";
            key_version?: number;
            key_proof: components["schemas"]["KeyProof"] | null;
            last_seen_at: string | null;
            metadata: {
                [key: string]: unknown;
            };
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            created_at: string;
        };
        /** @description The keys that complete a two-step registration */
        AgentConnection: {
            /** @description Base64 of the 32-byte X25519 public key */
            public_key: string;
            /**
             * @default X25519
             * @constant
             */
            public_key_algorithm?: "X25519";
            /** @description Base64 of the 32-byte Ed25519 signing public key */
            signing_public_key?: string;
            /**
             * @default Ed25519
             * @constant
             */
            signing_key_algorithm?: "Ed25519";
        };
        /** @description The agents of the caller's account */
        AgentList: {
            agents: components["schemas"]["AgentListItem"][];
        };
        /** @description An agent as listed: without its keys */
        AgentListItem: {
            /** Format: uuid */
            id: string;
            /** @description The agent's slug, unique on its account */
            agent_id: string;
            name: string | null;
            description: string | null;
            webhook_url: string | null;
            /** @description null while no webhook_url is set; `disabled` after 3 days of failures (decisions 8.3) */
            webhook_status: ("active" | "disabled") | null;
            agent_type: string;
            /** @enum {string} */
            connection_status: "pending" | "connected" | "disconnected";
            key_version?: number;
            last_seen_at: string | null;
            metadata: {
                [key: string]: unknown;
            };
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            created_at: string;
        };
        /**
         * @description Registers an agent: one-shot with `public_key`, two-step without
         * @example {
         *       "agent_id": "report-bot",
         *       "public_key": "q1v9Tq4mXo5b3n1d6QmJt2yCk6g0Yw4oH2rj5m8Yb2c="
         *     }
         */
        AgentRegistration: {
            /** @description The agent's slug: letters, digits, hyphen, underscore, dot */
            agent_id: string;
            /** @description With it the agent is connected at once; without, two-step */
            public_key?: string;
            /**
             * @default X25519
             * @constant
             */
            public_key_algorithm?: "X25519";
            /** @description Base64 of the 32-byte Ed25519 signing public key */
            signing_public_key?: string;
            /**
             * @default Ed25519
             * @constant
             */
            signing_key_algorithm?: "Ed25519";
            name?: string;
            description?: string;
            /** Format: uri */
            webhook_url?: string;
            /** @enum {string} */
            agent_type?: "custom" | "langchain" | "crewai" | "autogen" | "mastra" | "n8n";
            /** @description Free-form JSON object, at most 16 KB as JSON */
            metadata?: {
                [key: string]: unknown;
            };
        };
        /** @description The profile fields to change; keys never change here */
        AgentUpdate: {
            name?: string;
            description?: string | null;
            webhook_url?: string | null;
            /** @enum {string} */
            agent_type?: "custom" | "langchain" | "crewai" | "autogen" | "mastra" | "n8n";
            /** @description Free-form JSON object, at most 16 KB as JSON */
            metadata?: {
                [key: string]: unknown;
            };
        };
        /**
         * @description An API key in use (never the key itself)
         * @example {
         *       "id": "0b6e4f7a-2c1d-4e3f-8a9b-1c2d3e4f5a6b",
         *       "name": "ci",
         *       "created_at": "2026-01-01T12:00:00.000Z"
         *     }
         */
        ApiKey: {
            /** Format: uuid */
            id: string;
            name: string;
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            created_at: string;
        };
        /** @description The new key's name */
        ApiKeyCreation: {
            name: string;
        };
        /** @description API keys in use */
        ApiKeyList: {
            api_keys: components["schemas"]["ApiKey"][];
        };
        /** @description A page of the account's audit feed */
        AuditPage: {
            entries: components["schemas"]["HistoryEntry"][];
            /** @description Pass as `cursor` for the next page */
            next_cursor: string | null;
            has_more: boolean;
        };
        /** @description An announcement from the operator (spec 2.5) */
        Broadcast: {
            /** Format: uuid */
            id: string;
            title: string;
            /** @description Markdown */
            content: string;
            severity: components["schemas"]["BroadcastSeverity"];
            affected_components: string[];
            /** @description How many agents it was delivered to */
            agent_count: number;
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            created_at: string;
        };
        /** @description A page of the calling agent's unread broadcasts */
        BroadcastPage: {
            broadcasts: components["schemas"]["Broadcast"][];
            total: number;
            limit: number;
            offset: number;
            has_more: boolean;
        };
        /**
         * @description A broadcast to publish
         * @example {
         *       "title": "Maintenance",
         *       "content": "At 02:00 UTC",
         *       "severity": "info"
         *     }
         */
        BroadcastPublication: {
            title: string;
            /** @description Markdown */
            content: string;
            severity: components["schemas"]["BroadcastSeverity"];
            /** @default [] */
            affected_components?: string[];
            /** @description agent UUIDs; default every agent that is not disconnected at publish time */
            agent_ids?: string[];
        };
        /** @description A broadcast burnt for an agent */
        BroadcastRead: {
            /** Format: uuid */
            broadcast_id: string;
            /**
             * Format: uuid
             * @description the reading agent's UUID
             */
            agent_id: string;
            /** @constant */
            status: "read";
        };
        /**
         * @description How urgent a broadcast is; action_required and critical are shown at start-up
         * @enum {string}
         */
        BroadcastSeverity: "info" | "action_required" | "critical";
        /** @description How far to move the clock */
        ClockAdvance: {
            advance_seconds: number;
        };
        /** @description The service's time after the move */
        ClockTime: {
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            now: string;
        };
        /** @description An account's month as the log stood at `head_position` (decisions 6.4) */
        ComplianceReport: {
            account_id: string;
            /** @description YYYY-MM */
            month: string;
            generated_at: string | null;
            /** @description The log position the report was computed at */
            head_position: string | null;
            transfers: {
                created: number;
                downloaded: number;
                expired: number;
                deleted: number;
                /** Format: int64 */
                bytes_uploaded: number;
                downloads: number;
            };
            by_agent: {
                agent_id: string;
                sent: number;
                received: number;
                downloads: number;
                /** Format: int64 */
                bytes_uploaded: number;
            }[];
            api_keys: {
                created: number;
                revoked: number;
            };
            connections: {
                requested: number;
                accepted: number;
                declined: number;
                revoked: number;
            };
            erasures: number;
        };
        /** @description The transfer, active once confirmed */
        ConfirmedRequestTransfer: {
            transfer_id: string;
            status: string;
        };
        /** @description A two-step registration completed */
        ConnectedAgent: {
            agent_id: string;
            /** @constant */
            status: "connected";
            key_version: number;
            message: string;
        };
        /**
         * @description A connection between the caller's account and another (decisions 3.18)
         * @example {
         *       "id": "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a",
         *       "status": "active",
         *       "direction": "outgoing",
         *       "peer_account": {
         *         "id": "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
         *         "name": "Partner Ltd",
         *         "email_masked": "p*****r@example.com"
         *       },
         *       "created_at": "2026-01-01T12:00:00.000Z",
         *       "updated_at": "2026-01-01T12:05:00.000Z"
         *     }
         */
        Connection: {
            /** Format: uuid */
            id: string;
            /** @enum {string} */
            status: "pending" | "active" | "declined" | "revoked";
            /** @enum {string} */
            direction: "outgoing" | "incoming";
            peer_account: {
                /** Format: uuid */
                id: string;
                name: string;
                email_masked: string;
            };
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            created_at: string;
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            updated_at: string;
        };
        /** @description The caller's connections */
        ConnectionList: {
            connections: components["schemas"]["Connection"][];
        };
        /**
         * @description Whom to invite
         * @example {
         *       "account": "partner@example.com"
         *     }
         */
        ConnectionRequest: {
            /** @description The other account's e-mail address or id */
            account: string;
        };
        /** @description RFC 9162 2.1.4: the signed tree of `to` leaves extends the one of `from` */
        ConsistencyProof: {
            from: number;
            to: number;
            proof: string[];
        };
        /** @description The account and its first API key */
        CreatedAccount: {
            account: components["schemas"]["Account"];
            api_key: components["schemas"]["IssuedApiKey"];
        };
        /** @description A deleted transfer */
        DeletedTransfer: {
            id: string;
            /** @constant */
            status: "deleted";
        };
        /** @description The token of the verification link */
        EmailVerification: {
            token: string;
        };
        /** @description A completed erasure (decisions 6.5) */
        Erasure: {
            /** Format: uuid */
            id: string;
            account_id: string | null;
            /** @description Transfers whose personal data went with it */
            transfers: number;
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            erased_at: string;
        };
        /**
         * @description The one error body of every failure (decisions 3.1)
         * @example {
         *       "error": {
         *         "code": "VALIDATION_ERROR",
         *         "message": "agent_id: only letters, digits, hyphen, underscore and dot",
         *         "status": 400,
         *         "details": [
         *           {
         *             "path": "agent_id",
         *             "message": "only letters, digits, hyphen, underscore and dot"
         *           }
         *         ]
         *       }
         *     }
         */
        ErrorBody: {
            error: {
                /** @description Stable machine-readable code, e.g. VALIDATION_ERROR, NOT_FOUND, RATE_LIMITED */
                code: string;
                /** @description One sentence for a person */
                message: string;
                /** @description The HTTP status, repeated */
                status: number;
                details?: components["schemas"]["ErrorDetail"][];
                /** @description With AMBIGUOUS_RECIPIENT: the accounts the recipient could be */
                candidates?: {
                    account_id: string;
                    account_name: string;
                    email_masked: string;
                }[];
            };
        };
        /** @description One thing wrong with the request: where (`body.files.0.size`, `headers.idempotency-key`) and what */
        ErrorDetail: {
            path: string;
            message: string;
        };
        /**
         * @description How long the transfer lives, capped by the plan's retention
         * @enum {string}
         */
        ExpiresIn: "1h" | "12h" | "24h" | "7d" | "14d" | "30d" | "90d";
        /**
         * @description The process answers
         * @example {
         *       "status": "ok"
         *     }
         */
        Healthy: {
            /** @constant */
            status: "ok";
        };
        /** @description Events in log order */
        History: {
            entries: components["schemas"]["HistoryEntry"][];
        };
        /** @description One event as history shows it (decisions 6.1) */
        HistoryEntry: {
            /** @description Opaque; sorts in log order */
            position: string;
            /** @description The event's type, e.g. TransferCreated */
            type: string;
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            at: string;
            actor: {
                kind: components["schemas"]["ActorKind"];
                account_id: string | null;
                agent_id: string | null;
                key_id: string | null;
            };
            /** @description The event's data: no secrets, personal data opened or [erased] */
            data: {
                [key: string]: unknown;
            };
        };
        /** @description Incoming transfers of an agent */
        InboxPage: {
            transfers: components["schemas"]["Transfer"][];
            /** @description Pass as `cursor` for the next page */
            next_cursor: string | null;
            has_more: boolean;
        };
        /** @description RFC 9162 2.1.3: the audit path of a leaf in a signed tree */
        InclusionProof: {
            leaf_index: number;
            tree_size: number;
            /** @description base64 of a 32-byte SHA-256 hash */
            leaf_hash: string;
            proof: string[];
        };
        /**
         * @description A new API key
         * @example {
         *       "id": "0b6e4f7a-2c1d-4e3f-8a9b-1c2d3e4f5a6b",
         *       "name": "ci",
         *       "api_key": "hnd_2Xk9v0Qm4Lr8Tz1Wc7Ny5Bp3Hd6Fj0Sa",
         *       "created_at": "2026-01-01T12:00:00.000Z"
         *     }
         */
        IssuedApiKey: {
            /** Format: uuid */
            id: string;
            name: string;
            /** @description The key itself (`hnd_…`): shown this once, never again */
            api_key: string;
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            created_at: string;
        };
        /**
         * @description A new request link, with its token and page
         * @example {
         *       "id": "5a0c7e1e-8f7b-4c1e-9d51-2f0f6f3b9a10",
         *       "token": "hrq_4kz8Qm1vW0pR7tY2nB5xC9dF3gH6jK8L",
         *       "url": "http://127.0.0.1:8080/r/hrq_4kz8Qm1vW0pR7tY2nB5xC9dF3gH6jK8L",
         *       "agent": "invoice-bot",
         *       "title": "Your March invoice",
         *       "message": "PDF please",
         *       "max_files": 3,
         *       "max_total_size": 52428800,
         *       "expires_at": "2026-01-08T12:00:00.000Z",
         *       "max_uses": 1,
         *       "uses": 0,
         *       "status": "active",
         *       "created_at": "2026-01-01T12:00:00.000Z"
         *     }
         */
        IssuedRequestLink: {
            /** Format: uuid */
            id: string;
            /** @description `hrq_` + 32 base64url characters: shown this once, never again */
            token: string;
            /** @description {PUBLIC_BASE_URL}/r/{token}: the page a person opens to send */
            url: string;
            /** @description The receiving agent's slug */
            agent: string;
            title: string;
            message: string | null;
            max_files: number;
            /** Format: int64 */
            max_total_size: number;
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            expires_at: string;
            max_uses: number;
            uses: number;
            status: components["schemas"]["RequestStatus"];
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            created_at: string;
        };
        /** @description How the receiving key pair is derived from the person's passphrase */
        Kdf: {
            /** @constant */
            algorithm: "argon2id";
            salt: string;
            memory_kib: number;
            iterations: number;
            parallelism: number;
        };
        /** @description How the receiving key pair is derived from the person's passphrase */
        KdfInput: {
            /** @constant */
            algorithm: "argon2id";
            salt: string;
            memory_kib: number;
            iterations: number;
            parallelism: number;
        };
        /** @description The leaf that set the agent's current keys, proven in a signed checkpoint (decisions 9.6); null until a checkpoint covers it (within about a second of a registration) */
        KeyProof: {
            leaf_index: number;
            entry: components["schemas"]["LogEntry"];
            tree_size: number;
            /** @description The signed note of the tree the proof is against */
            checkpoint: string;
            inclusion: string[];
        };
        /** @description Someone without an account who answered a request link: what they typed, unverified */
        LinkSender: {
            /** @constant */
            kind: "link";
            /** @description The name the sender typed, unverified; null when none */
            name: string | null;
            /** @description The e-mail address the sender typed, unverified; null when none */
            email: string | null;
            /** @constant */
            verified: false;
        };
        /** @description A leaf of the log: its bytes are this object's RFC 8785 canonical JSON (decisions 9.1) */
        LogEntry: {
            position: string;
            type: string;
            stream: string;
            at: string;
            /** @description As stored: personal data sealed (decisions 6.5) */
            data: {
                [key: string]: unknown;
            };
        };
        /** @description The session ended */
        LoggedOut: {
            /** @constant */
            status: "logged_out";
        };
        /** @description A person's credentials */
        LogIn: {
            email: string;
            password: string;
        };
        /** @description The key the log signs its checkpoints with (decisions 9.2) */
        LogKey: {
            origin: string;
            /** @description base64 of the 32-byte Ed25519 public key */
            public_key: string;
            /** @description The signed-note verifier key: <origin>+<key id>+<base64(0x01 ‖ key)> */
            vkey: string;
        };
        /** @description An event's place in the log, and the leaf it is */
        LogLeaf: {
            leaf_index: number;
            entry: components["schemas"]["LogEntry"];
        };
        /**
         * @description How e-mail to people leaves: smtp, or outbox (kept on the server: no SMTP configured)
         * @example {
         *       "delivery": "outbox"
         *     }
         */
        MailDelivery: {
            /** @enum {string} */
            delivery: "smtp" | "outbox";
        };
        /**
         * @description The address to mail a link to
         * @example {
         *       "email": "carol@example.com"
         *     }
         */
        MailRequest: {
            /** Format: email */
            email: string;
        };
        /**
         * @description The one answer for any address, with an account or not: it tells nobody whether the address has one
         * @example {
         *       "status": "accepted",
         *       "message": "if this address has an account that needs it, an e-mail is on its way"
         *     }
         */
        MailRequested: {
            /** @constant */
            status: "accepted";
            message: string;
        };
        /** @description A new login password, with the current one */
        PasswordChange: {
            current_password: string;
            /** @description 10 to 200 characters */
            new_password: string;
        };
        /** @description A new login password, with the reset link's token */
        PasswordReset: {
            /** @description The token=… of the password-reset e-mail's link */
            token: string;
            /** @description 10 to 200 characters */
            password: string;
        };
        /** @description Whom to erase */
        PersonErasure: {
            /** Format: email */
            email: string;
        };
        /**
         * @description A plan of the catalog
         * @enum {string}
         */
        Plan: "free" | "builder" | "team" | "scale" | "enterprise";
        /** @description The new plan */
        PlanChange: {
            plan: components["schemas"]["Plan"];
        };
        /** @description A plan's limits (null: unlimited) */
        PlanLimits: {
            /** @description null: unlimited */
            transfers_per_month: number | null;
            /** @description null: unlimited */
            storage_bytes: number | null;
            /** @description null: unlimited */
            max_file_size: number | null;
            /** @description null: unlimited */
            max_agents: number | null;
            /** @description null: unlimited */
            max_connections: number | null;
        };
        /** @description A signed receipt */
        PostedReceipt: {
            receipt: components["schemas"]["Receipt"];
            /** @description Ed25519 signature of the receipt's canonical JSON by the recipient agent's signing key */
            signature: string;
        };
        /**
         * @description A presigned transfer: upload each file to its link, then confirm
         * @example {
         *       "id": "tr_3f9a1c",
         *       "upload_urls": [
         *         {
         *           "file_id": "f_1",
         *           "file_name": "report.pdf",
         *           "upload_url": "http://127.0.0.1:8080/v1/uploads/eyJrIjoi",
         *           "resumable_url": "http://127.0.0.1:8080/v1/uploads/eyJrIjoi",
         *           "method": "PUT",
         *           "headers": {
         *             "content-type": "application/pdf"
         *           }
         *         }
         *       ],
         *       "confirm_url": "http://127.0.0.1:8080/v1/transfers/tr_3f9a1c/confirm",
         *       "expires_at": "2026-01-01T13:00:00.000Z"
         *     }
         */
        PresignedTransfer: {
            id: string;
            upload_urls: components["schemas"]["PresignedUploadLink"][];
            confirm_url: string;
            /**
             * Format: date-time
             * @description When the upload links expire
             */
            expires_at: string;
        };
        /**
         * @description A transfer whose files the client uploads itself to the signed links of the answer
         * @example {
         *       "mode": "agent-to-agent",
         *       "sender": "report-bot",
         *       "recipient": "archive-bot",
         *       "files": [
         *         {
         *           "name": "report.pdf",
         *           "size": 52431,
         *           "content_type": "application/pdf"
         *         }
         *       ]
         *     }
         */
        PresignedTransferRequest: {
            mode: components["schemas"]["SendMode"];
            /** @description The sending agent's slug, or the sender's e-mail address */
            sender: string;
            /** @description The receiving agent's slug, or a person's e-mail address */
            recipient: string;
            /** @description The recipient's account (id or e-mail), when the slug is on several connected accounts */
            recipient_account?: string;
            files: {
                name: string;
                /** Format: int64 */
                size: number;
                /** @default application/octet-stream */
                content_type?: string;
                encryption_iv?: string;
            }[];
            /** @default 24h */
            expires_in?: components["schemas"]["ExpiresIn"];
            /** @default 10 */
            max_downloads?: number;
            message?: string;
            /** @description Free-form JSON object, at most 16 KB as JSON */
            metadata?: {
                [key: string]: unknown;
            };
            /** @default false */
            is_encrypted?: boolean;
            /** @default false */
            auto_delete?: boolean;
            recipient_key_version?: number;
            /** @description The file key, sealed for the recipient (base64) */
            encrypted_key?: string;
            /** @constant */
            encryption_algorithm?: "AES-256-GCM";
            /** @description The sender's Ed25519 signature (base64) */
            sender_signature?: string;
        };
        /** @description Where one file of a presigned transfer is uploaded (decisions 3.16, 7.1) */
        PresignedUploadLink: {
            file_id: string;
            file_name: string;
            upload_url: string;
            /** @description The same file as a tus 1.0.0 upload resource (decisions 7.1) */
            resumable_url: string;
            /** @constant */
            method: "PUT";
            /** @description Headers the upload must carry */
            headers: {
                [key: string]: string;
            };
        };
        /** @description Everything an agent needs at start-up, in one call (spec 4.8) */
        Profile: {
            agent: {
                /** Format: uuid */
                id: string;
                agent_id: string;
                name: string | null;
                description: string | null;
                /** @constant */
                connection_status: "connected";
                key_version: number;
                /** @constant */
                public_key_algorithm: "X25519";
                /**
                 * Format: date-time
                 * @description ISO 8601 time (UTC)
                 */
                last_seen_at: string;
            };
            account: {
                plan: string;
                email: string;
            };
            plan_limits: {
                /** @description null: unlimited */
                transfers_per_month: number | null;
                /**
                 * Format: int64
                 * @description null: unlimited
                 */
                storage_bytes: number | null;
                /**
                 * Format: int64
                 * @description null: unlimited
                 */
                max_file_size: number | null;
                /** @description null: unlimited */
                max_agents: number | null;
                /** @description null: unlimited */
                max_connections: number | null;
            };
            connections: {
                active: number;
                pending_incoming: number;
                pending_outgoing: number;
                paired_agents: string[];
            };
            inbox: {
                unread_transfers: number;
                recent: {
                    id: string;
                    sender: string;
                    /** @enum {string} */
                    status: "pending" | "active";
                    file_count: number;
                    /** Format: int64 */
                    total_size: number;
                    message: string | null;
                    is_encrypted: boolean;
                    /**
                     * Format: date-time
                     * @description ISO 8601 time (UTC)
                     */
                    created_at: string;
                    /**
                     * Format: date-time
                     * @description ISO 8601 time (UTC)
                     */
                    expires_at: string;
                }[];
            };
            broadcasts: {
                unread_count: number;
                urgent: {
                    /** Format: uuid */
                    id: string;
                    title: string;
                    /** @enum {string} */
                    severity: "action_required" | "critical";
                    content: string;
                    /**
                     * Format: date-time
                     * @description ISO 8601 time (UTC)
                     */
                    created_at: string;
                }[];
            };
            sdk: {
                latest_versions: {
                    node: string;
                    python: string;
                    mcp: string;
                };
            };
        };
        /** @description What a request link shows whoever holds its token: never the account or its other agents */
        PublicRequest: {
            title: string;
            message: string | null;
            agent: {
                agent_id: string;
                name: string | null;
                /** @description X25519 (base64): encrypt the content key to it (decisions 5.2) */
                public_key: string;
                key_version: number;
                /** @description The log's proof of this key (decisions 9.6): check it before encrypting a byte */
                key_proof: components["schemas"]["KeyProof"] | null;
            };
            max_files: number;
            /** Format: int64 */
            max_total_size: number;
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            expires_at: string;
            ask_sender_name: boolean;
            ask_sender_email: boolean;
        };
        /**
         * @description Every store answers, the blob disk has room and the projections are caught up
         * @example {
         *       "status": "ready"
         *     }
         */
        Ready: {
            /** @constant */
            status: "ready";
            /** @description What runs in a fallback now (rate limits counted per process while Redis is away) */
            degraded?: {
                path: string;
                message: string;
            }[];
        };
        /** @description What the recipient received; its RFC 8785 bytes are what the agent signs */
        Receipt: {
            /** @constant */
            type: "handoff.receipt/v1";
            transfer_id: string;
            /** @description The recipient agent's uuid */
            recipient: string;
            /** @description The sender's signature (decisions 5.4), or null */
            sender_signature: string | null;
            files: {
                name: string;
                size: number;
                /** @description Of the plaintext written */
                sha256: string;
                /** @description Of the bytes downloaded, as stored */
                stored_sha256: string;
            }[];
            /** @description Shield's level and verdict (decisions 5.6), or null when it was off */
            shield: {
                level: string;
                verdict: string;
            } | null;
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            received_at: string;
        };
        /** @description A recorded receipt, as posted */
        ReceiptEntry: {
            receipt: {
                [key: string]: unknown;
            };
            signature: string;
            position: string;
            leaf_index: number | null;
        };
        /** @description Receipts in log order */
        ReceiptList: {
            receipts: components["schemas"]["ReceiptEntry"][];
        };
        /** @description A person's receiving public key (decisions 4.4) */
        ReceivingKey: {
            public_key: string;
            kdf: components["schemas"]["Kdf"];
            key_version: number;
        };
        /** @description The new receiving public key and how it was derived */
        ReceivingKeyChange: {
            public_key: string;
            kdf: components["schemas"]["KdfInput"];
        };
        /** @description Where the receipt stands in the log */
        RecordedReceipt: {
            position: string;
            /** @description Its leaf in the transparency log; null if the log has not reached it yet */
            leaf_index: number | null;
        };
        /**
         * @description A newly registered agent; two-step registrations carry their connection token
         * @example {
         *       "id": "6f1c2b7e-3d4a-4c5b-9e8f-0a1b2c3d4e5f",
         *       "agent_id": "report-bot",
         *       "name": null,
         *       "connection_status": "connected",
         *       "public_key": "q1v9Tq4mXo5b3n1d6QmJt2yCk6g0Yw4oH2rj5m8Yb2c=",
         *       "key_version": 1,
         *       "connection_token": null,
         *       "claim_code": null,
         *       "token_expires_at": null,
         *       "inbox_url": "http://127.0.0.1:8080/v1/transfers/inbox?agent_id=report-bot",
         *       "created_at": "2026-01-01T12:00:00.000Z",
         *       "message": "Agent report-bot is registered and connected."
         *     }
         */
        RegisteredAgent: {
            /** Format: uuid */
            id: string;
            agent_id: string;
            name: string | null;
            /** @enum {string} */
            connection_status: "pending" | "connected";
            public_key?: string;
            key_version?: number;
            /** @description Two-step only: the one-time token for POST /v1/agents/connect */
            connection_token: string | null;
            claim_code: string | null;
            token_expires_at: string | null;
            inbox_url: string;
            /** @description With a webhook_url: its signing secret, shown once */
            webhook_secret?: string;
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            created_at: string;
            message: string;
        };
        /** @description A request link (never its token, shown once at creation) */
        RequestLink: {
            /** Format: uuid */
            id: string;
            /** @description The receiving agent's slug */
            agent: string;
            title: string;
            message: string | null;
            max_files: number;
            /** Format: int64 */
            max_total_size: number;
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            expires_at: string;
            max_uses: number;
            uses: number;
            status: components["schemas"]["RequestStatus"];
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            created_at: string;
        };
        /**
         * @description A request link to create (decisions 10.1)
         * @example {
         *       "title": "Your March invoice",
         *       "message": "PDF please",
         *       "max_files": 3,
         *       "expires_in": "7d"
         *     }
         */
        RequestLinkCreation: {
            /** @description The receiving agent's slug (else X-Service-Agent, else the account's first agent) */
            agent?: string;
            title: string;
            message?: string;
            /** @default 10 */
            max_files?: number;
            /**
             * Format: int64
             * @description Bytes as uploaded (encrypted); default and ceiling: the plan's maximum file size
             */
            max_total_size?: number;
            /** @description Default 7d, within the plan's retention */
            expires_in?: components["schemas"]["ExpiresIn"];
            /** @default 1 */
            max_uses?: number;
            /** @default false */
            ask_sender_name?: boolean;
            /** @default false */
            ask_sender_email?: boolean;
        };
        /** @description Request links */
        RequestLinkList: {
            requests: components["schemas"]["RequestLink"][];
        };
        /**
         * @description active: takes files; used: its uses are spent; expired; revoked by its owner
         * @enum {string}
         */
        RequestStatus: "active" | "used" | "expired" | "revoked";
        /** @description A transfer through a request link: upload each file (PUT or tus), then confirm */
        RequestTransfer: {
            transfer_id: string;
            upload_urls: components["schemas"]["PresignedUploadLink"][];
            /** @description POST it, with no credential, once every file is uploaded */
            confirm_url: string;
        };
        /** @description Files sent through a request link, declared before any byte; always encrypted */
        RequestTransferCreation: {
            files: {
                name: string;
                /**
                 * Format: int64
                 * @description Bytes as uploaded: the HOE1 file (decisions 5.3)
                 */
                size: number;
                /** @default application/octet-stream */
                content_type?: string;
                /** @description base64 of the file's HOE1 salt */
                encryption_iv: string;
            }[];
            /** @description The content key wrapped to the agent's key (base64) */
            encrypted_key: string;
            recipient_key_version?: number;
            sender_name?: string;
            /** Format: email */
            sender_email?: string;
        };
        /** @description The keys to encrypt for an agent or a person (spec 4.7) */
        ResolvedAgent: {
            /** @description The agent's slug, or the person's e-mail address */
            agent_id: string;
            /** @description Base64 X25519 public key to encrypt for; null while pending */
            public_key: string | null;
            /** @constant */
            public_key_algorithm: "X25519";
            key_version: number | null;
            /** @description Base64 Ed25519 key that verifies the agent's signatures */
            signing_public_key: string | null;
            /** @enum {string} */
            connection_status: "pending" | "connected";
            /** @description An agent's: the log's proof of these keys (decisions 9.6); null for a person */
            key_proof: components["schemas"]["KeyProof"] | null;
        };
        /** @description A revoked API key: its next use answers 401 */
        RevokedApiKey: {
            /** Format: uuid */
            id: string;
            name: string;
            /** @constant */
            status: "revoked";
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            revoked_at: string;
        };
        /**
         * @description An agent the caller may send to (spec 2.2)
         * @example {
         *       "id": "6f1c2b7e-3d4a-4c5b-9e8f-0a1b2c3d4e5f",
         *       "agent_id": "archive-bot",
         *       "name": "Archive",
         *       "own": false,
         *       "account_name": "Partner Ltd"
         *     }
         */
        SendableAgent: {
            /** Format: uuid */
            id: string;
            agent_id: string;
            name: string | null;
            /** @description Whether the agent is on the caller's own account */
            own: boolean;
            /** @description The other account's name, for agents of connected accounts */
            account_name?: string;
        };
        /** @description Agents the caller may send to */
        SendableAgentList: {
            agents: components["schemas"]["SendableAgent"][];
        };
        /**
         * @description Who sends to whom: an agent or a person on either side
         * @enum {string}
         */
        SendMode: "agent-to-agent" | "agent-to-human" | "human-to-agent";
        /** @description A session */
        Session: {
            /** @description The session token (`hss_…`): the Bearer credential of later requests */
            token: string;
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            expires_at: string;
            account: components["schemas"]["Account"];
        };
        /**
         * @description A new person's account
         * @example {
         *       "email": "ada@example.com",
         *       "password": "correct horse battery"
         *     }
         */
        SignUp: {
            /** Format: email */
            email: string;
            password: string;
            name?: string;
        };
        /**
         * @description A transfer (spec 2.3)
         * @example {
         *       "id": "tr_3f9a1c",
         *       "url": "http://127.0.0.1:8080/t/tr_3f9a1c",
         *       "api_url": "http://127.0.0.1:8080/v1/transfers/tr_3f9a1c",
         *       "status": "active",
         *       "pending_reason": null,
         *       "mode": "agent-to-agent",
         *       "request_id": null,
         *       "sender": "report-bot",
         *       "recipient": "archive-bot",
         *       "files": [
         *         {
         *           "name": "report.pdf",
         *           "size": 52431,
         *           "type": "application/pdf"
         *         }
         *       ],
         *       "file_count": 1,
         *       "total_size": 52431,
         *       "max_downloads": 10,
         *       "downloads": 0,
         *       "is_encrypted": true,
         *       "auto_delete": true,
         *       "message": null,
         *       "created_at": "2026-01-01T12:00:00.000Z",
         *       "expires_at": "2026-01-02T12:00:00.000Z"
         *     }
         */
        Transfer: {
            id: string;
            url: string;
            api_url: string;
            status: components["schemas"]["TransferStatus"];
            pending_reason: string | null;
            mode: components["schemas"]["TransferMode"];
            /** @description Mode `request`: the request link it came through (decisions 10.3); else null */
            request_id: string | null;
            sender: string | components["schemas"]["LinkSender"];
            recipient: string;
            files: components["schemas"]["TransferFileInfo"][];
            file_count: number;
            /** Format: int64 */
            total_size: number;
            max_downloads: number;
            downloads: number;
            is_encrypted: boolean;
            auto_delete: boolean;
            message: string | null;
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            created_at: string;
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            expires_at: string;
        };
        /**
         * @description A counted download: signed links to each file and what decrypts them
         * @example {
         *       "id": "tr_3f9a1c",
         *       "files": [
         *         {
         *           "file_name": "report.pdf",
         *           "download_url": "http://127.0.0.1:8080/v1/files/eyJrIjoi",
         *           "size": 52431,
         *           "encryption_iv": null
         *         }
         *       ],
         *       "downloads": 1,
         *       "downloads_remaining": 9,
         *       "expires_at": "2026-01-02T12:00:00.000Z",
         *       "auto_delete": true,
         *       "is_encrypted": false,
         *       "encrypted_key": null,
         *       "encryption_algorithm": null,
         *       "recipient_key_version": null,
         *       "sender_signature": null,
         *       "channel_id": null,
         *       "encryption_salt": null,
         *       "sender_public_key": null,
         *       "recipient_public_key": null
         *     }
         */
        TransferDownload: {
            id: string;
            files: {
                file_name: string;
                /** @description Signed link, valid 15 minutes; honours Range */
                download_url: string;
                /** Format: int64 */
                size: number;
                encryption_iv: string | null;
            }[];
            downloads: number;
            downloads_remaining: number;
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            expires_at: string;
            auto_delete: boolean;
            is_encrypted: boolean;
            encrypted_key: string | null;
            encryption_algorithm: string | null;
            recipient_key_version: number | null;
            sender_signature: string | null;
            channel_id: string | null;
            encryption_salt: string | null;
            sender_public_key: string | null;
            recipient_public_key: string | null;
        };
        /** @description One file of a transfer */
        TransferFileInfo: {
            name: string;
            /** Format: int64 */
            size: number;
            /** @description Media type */
            type: string;
        };
        /** @description The fields of a multipart transfer; each file is a `files` part */
        TransferForm: {
            /** @description The sending agent's slug, or the sender's e-mail address */
            sender: string;
            /** @description The receiving agent's slug, or a person's e-mail address */
            recipient: string;
            /** @description The recipient's account (id or e-mail), when the slug is on several connected accounts */
            recipient_account?: string;
            mode: components["schemas"]["SendMode"];
            /** @enum {string} */
            is_encrypted?: "0" | "1" | "true" | "false";
            message?: string;
            /**
             * @description Delete the files once the last download is counted
             * @enum {string}
             */
            auto_delete?: "0" | "1" | "true" | "false";
            max_downloads?: string;
            /** @default 24h */
            expires_in?: components["schemas"]["ExpiresIn"];
            recipient_key_version?: string;
            /** @description A JSON object, at most 16 KB */
            metadata?: string;
            /** @description The file key, sealed for the recipient (base64) */
            encrypted_key?: string;
            /** @constant */
            encryption_algorithm?: "AES-256-GCM";
            /** @description The sender's Ed25519 signature (base64) */
            sender_signature?: string;
        };
        /**
         * @description Who sends to whom: an agent or a person on either side; `request`: someone answering a request link
         * @enum {string}
         */
        TransferMode: "agent-to-agent" | "agent-to-human" | "human-to-agent" | "request";
        /** @description A page of transfers, newest first */
        TransferPage: {
            transfers: components["schemas"]["Transfer"][];
            total: number;
            limit: number;
            offset: number;
            has_more: boolean;
        };
        /**
         * @description pending: files still uploading; pending_recipient: waiting for the person's receiving key; active: downloadable; downloaded: no downloads left; expired; deleted
         * @enum {string}
         */
        TransferStatus: "pending" | "pending_recipient" | "active" | "downloaded" | "expired" | "deleted";
        /** @description An agent after a profile change */
        UpdatedAgent: {
            /** Format: uuid */
            id: string;
            /** @description The agent's slug, unique on its account */
            agent_id: string;
            name: string | null;
            description: string | null;
            webhook_url: string | null;
            /** @description null while no webhook_url is set; `disabled` after 3 days of failures (decisions 8.3) */
            webhook_status: ("active" | "disabled") | null;
            agent_type: string;
            /** @enum {string} */
            connection_status: "pending" | "connected" | "disconnected";
            metadata: {
                [key: string]: unknown;
            };
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            created_at: string;
            /** @description Only the first time a webhook_url is set */
            webhook_secret?: string;
        };
        /** @description A file stored through its signed upload link */
        UploadedFile: {
            file_id: string;
            /** Format: int64 */
            size: number;
        };
        /** @description One attempt to deliver a webhook message */
        WebhookAttempt: {
            /**
             * Format: date-time
             * @description ISO 8601 time (UTC)
             */
            at: string;
            /** @description null when no answer came */
            status_code: number | null;
            duration_ms: number;
            /** @description Why the attempt failed; null when it delivered */
            error: string | null;
        };
        /** @description A webhook message and its attempts (decisions 8.3) */
        WebhookDelivery: {
            /** @description The `webhook-id` header, the same on every attempt */
            message_id: string;
            /** @enum {string} */
            type: "transfer.received" | "transfer.downloaded" | "transfer.expired" | "transfer.receipt" | "broadcast.published" | "webhook.test";
            /** @enum {string} */
            status: "pending" | "delivered" | "failed";
            attempts: components["schemas"]["WebhookAttempt"][];
            next_attempt_at: string | null;
        };
        /** @description An agent's webhook messages, newest first */
        WebhookDeliveryPage: {
            deliveries: components["schemas"]["WebhookDelivery"][];
            /** @description Pass as `cursor` for the next page */
            next_cursor: string | null;
            has_more: boolean;
        };
        /** @description A new webhook secret; the previous one also signs for 24 hours */
        WebhookSecret: {
            /** @description `whsec_` + base64 of 32 random bytes; shown only in this answer (decisions 8.1) */
            webhook_secret: string;
        };
        /** @description A webhook.test message queued for the agent's endpoint */
        WebhookTest: {
            /** @description The test message's id, as the delivery log shows it */
            message_id: string;
        };
        /** @description The caller's account, its plan's limits and the credential it called with */
        WhoAmI: {
            account: {
                /** Format: uuid */
                id: string;
                email: string;
                name: string;
                plan: string;
                /** @enum {string} */
                kind: "human" | "agent";
                /** @description Only on a person's account */
                email_verified?: boolean;
                /**
                 * Format: date-time
                 * @description ISO 8601 time (UTC)
                 */
                created_at: string;
            };
            plan_limits: components["schemas"]["PlanLimits"];
            credential: {
                /** @enum {string} */
                kind: "api_key" | "session";
                /** @description The API key's id; null for a session */
                key_id: string | null;
            };
        };
    };
    responses: {
        /** @description Refused by the HTTP layer before the operation ran, in the one error body: a malformed request (400 BAD_REQUEST), a stalled one (408 REQUEST_TIMEOUT), a body, URI or headers too large (413 PAYLOAD_TOO_LARGE, 414 URI_TOO_LONG, 431 HEADERS_TOO_LARGE), an Expect it cannot meet (417) */
        ProtocolRefusal: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorBody"];
            };
        };
    };
    parameters: {
        /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
        "Idempotency-Key": string;
        /** @description The slug of the connected agent of the account this request acts as */
        "X-Service-Agent": string;
        /** @description One byte range: `bytes=a-b`, `bytes=a-` or `bytes=-n` */
        Range: string;
        /** @description The tus protocol version the client speaks: it must be 1.0.0 */
        "Tus-Resumable": "1.0.0";
        /** @description The offset the body's bytes go at: the upload's current offset (HEAD tells it) */
        "Upload-Offset": number;
        /** @description The checksum of this request's body: `sha1` or `sha256`, a space, the base64 digest. A mismatch keeps nothing of the request (460) */
        "Upload-Checksum": string;
        /** @description The `id` of the last event received: the stream replays what came after it (wins over `after`) */
        "Last-Event-ID": string;
    };
    requestBodies: never;
    headers: {
        /** @description The request's id, as in the service's logs */
        "X-Request-Id": string;
        /** @description Requests allowed in the current one-minute window for this credential */
        "X-RateLimit-Limit": number;
        /** @description Requests left in the current window */
        "X-RateLimit-Remaining": number;
        /** @description When the current window ends, in Unix seconds */
        "X-RateLimit-Reset": number;
        /** @description Seconds to wait before retrying (sent with the per-minute rate limit and with SERVICE_UNAVAILABLE) */
        "Retry-After": number;
        /** @description `true` when this is the stored answer to an earlier request with the same Idempotency-Key */
        "Idempotent-Replayed": "true";
        /** @description Byte ranges are served */
        "Accept-Ranges": "bytes";
        /** @description The bytes sent (`bytes 0-99/1234`), or the file's size on a 416 (`bytes *\/1234`) */
        "Content-Range": string;
        /** @description `attachment` with the file's name */
        "Content-Disposition": string;
        /** @description `no-store`: the answer changes as bytes arrive, or is a live event stream */
        "Cache-Control": "no-store";
        /** @description The tus protocol version of this server */
        "Tus-Resumable": "1.0.0";
        /** @description The tus protocol versions this server speaks */
        "Tus-Version": "1.0.0";
        /** @description The tus extensions this server supports */
        "Tus-Extension": string;
        /** @description The upload's declared size in bytes: it takes no more */
        "Tus-Max-Size": number;
        /** @description The algorithms Upload-Checksum may name */
        "Tus-Checksum-Algorithm": string;
        /** @description How many bytes of the upload are stored: the offset to send from */
        "Upload-Offset": number;
        /** @description The upload's declared size in bytes */
        "Upload-Length": number;
        /** @description When the upload link expires, as an HTTP date (RFC 9110) */
        "Upload-Expires": string;
    };
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    getHealth: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Healthy"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getReadiness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Ready to serve */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Ready"];
                };
            };
            /** @description NOT_READY: what is missing is in `details` */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    signUp: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SignUp"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AccountAnswer"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    verifyEmail: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EmailVerification"];
            };
        };
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AccountAnswer"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    logIn: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["LogIn"];
            };
        };
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Session"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    logOut: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LoggedOut"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getSession: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AccountAnswer"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getReceivingKey: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReceivingKey"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    setReceivingKey: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ReceivingKeyChange"];
            };
        };
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReceivingKey"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getAccount: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WhoAmI"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getMailDelivery: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MailDelivery"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    resendVerification: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["MailRequest"];
            };
        };
        responses: {
            /** @description Success */
            202: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MailRequested"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    forgotPassword: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["MailRequest"];
            };
        };
        responses: {
            /** @description Success */
            202: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MailRequested"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    resetPassword: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PasswordReset"];
            };
        };
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        status: "password_reset";
                    };
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    changePassword: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PasswordChange"];
            };
        };
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        status: "password_changed";
                    };
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    registerAgent: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentRegistration"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RegisteredAgent"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    connectAgent: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentConnection"];
            };
        };
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConnectedAgent"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    listAgents: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentList"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getAgent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Agent"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    disconnectAgent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Agent"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    updateAgent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentUpdate"];
            };
        };
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UpdatedAgent"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    rotateWebhookSecret: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookSecret"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    testWebhook: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            202: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookTest"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    listWebhookDeliveries: {
        parameters: {
            query?: {
                /** @description `next_cursor` of the previous page */
                cursor?: string;
                /** @description Page size */
                limit?: number;
            };
            header?: never;
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDeliveryPage"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    redeliverWebhookMessage: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path: {
                /** @description The resource's id */
                id: string;
                /** @description The message's id */
                message_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            202: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDelivery"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    listSendableAgents: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SendableAgentList"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    resolveAgent: {
        parameters: {
            query: {
                /** @description The agent's slug or id, or a person's e-mail address */
                agent_id: string;
                /** @description The account (id or e-mail) to pick among agents of one slug */
                account?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ResolvedAgent"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getProfile: {
        parameters: {
            query?: never;
            header?: {
                /** @description The slug of the connected agent of the account this request acts as */
                "X-Service-Agent"?: components["parameters"]["X-Service-Agent"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Profile"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    listApiKeys: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKeyList"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    createApiKey: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ApiKeyCreation"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IssuedApiKey"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    createAccountApiKey: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path: {
                /** @description The caller's own account id */
                account_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    name?: string;
                } | null;
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IssuedApiKey"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    revokeApiKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The caller's own account id */
                account_id: string;
                /** @description The key's id */
                key_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RevokedApiKey"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    listConnections: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConnectionList"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    requestConnection: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ConnectionRequest"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Connection"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    acceptConnection: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Connection"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    declineConnection: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Connection"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    revokeConnection: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Connection"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    listTransfers: {
        parameters: {
            query?: {
                /** @description Only sent or only received transfers */
                direction?: "sent" | "received";
                /** @description Only transfers in this status */
                status?: "pending" | "pending_recipient" | "active" | "downloaded" | "expired";
                /** @description Page size */
                limit?: number;
                /** @description Transfers to skip */
                offset?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TransferPage"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    sendTransfer: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path?: never;
            cookie?: never;
        };
        /** @description The transfer's fields, then one `files` part per file (its filename and Content-Type kept) */
        requestBody: {
            content: {
                "multipart/form-data": components["schemas"]["TransferForm"] & {
                    /** @description One part per file */
                    files: string[];
                };
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Transfer"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description INSUFFICIENT_STORAGE: the server's storage is full; nothing of this request was stored */
            507: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    createPresignedTransfer: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PresignedTransferRequest"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PresignedTransfer"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    confirmTransfer: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Transfer"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description GONE: the resource existed but no longer takes this request */
            410: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getInbox: {
        parameters: {
            query?: {
                /** @description The agent's slug; default X-Service-Agent, else the whole account */
                agent_id?: string;
                /** @description `next_cursor` of the previous page */
                cursor?: string;
                /** @description Page size */
                limit?: number;
                /** @description Seconds to wait for a transfer when there is none */
                wait?: number;
            };
            header?: {
                /** @description The slug of the connected agent of the account this request acts as */
                "X-Service-Agent"?: components["parameters"]["X-Service-Agent"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InboxPage"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    streamInbox: {
        parameters: {
            query?: {
                /** @description The agent's slug; default X-Service-Agent, else the whole account */
                agent_id?: string;
                /** @description Start after this position (an event's `id` or a page's `next_cursor`) */
                after?: string;
            };
            header?: {
                /** @description The slug of the connected agent of the account this request acts as */
                "X-Service-Agent"?: components["parameters"]["X-Service-Agent"];
                /** @description The `id` of the last event received: the stream replays what came after it (wins over `after`) */
                "Last-Event-ID"?: components["parameters"]["Last-Event-ID"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description An event stream that lasts until the client or the server closes it */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_ACCEPTABLE: the Accept header admits none of the media types this operation answers */
            406: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getTransfer: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Transfer"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    deleteTransfer: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeletedTransfer"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    downloadTransfer: {
        parameters: {
            query?: never;
            header?: {
                /** @description The slug of the connected agent of the account this request acts as */
                "X-Service-Agent"?: components["parameters"]["X-Service-Agent"];
            };
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TransferDownload"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description GONE: the resource existed but no longer takes this request */
            410: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    uploadFile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The capability the signed link carries */
                token: string;
            };
            cookie?: never;
        };
        /** @description The file's bytes, at most its declared size */
        requestBody: {
            content: {
                "application/octet-stream": string;
            };
        };
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UploadedFile"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description GONE: the resource existed but no longer takes this request */
            410: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description INSUFFICIENT_STORAGE: the server's storage is full; nothing of this request was stored */
            507: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    terminateUpload: {
        parameters: {
            query?: never;
            header: {
                /** @description The tus protocol version the client speaks: it must be 1.0.0 */
                "Tus-Resumable": components["parameters"]["Tus-Resumable"];
            };
            path: {
                /** @description The capability the signed link carries */
                token: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Terminated: later requests on it answer 404 */
            204: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description GONE: the resource existed but no longer takes this request */
            410: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description PRECONDITION_FAILED: the request does not send `Tus-Resumable: 1.0.0` */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UPLOAD_LOCKED: another request is writing this upload; retry shortly */
            423: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getUploadOptions: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The capability the signed link carries */
                token: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tus version, extensions, checksum algorithms and the most bytes it takes */
            204: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Version": components["headers"]["Tus-Version"];
                    "Tus-Extension": components["headers"]["Tus-Extension"];
                    "Tus-Max-Size": components["headers"]["Tus-Max-Size"];
                    "Tus-Checksum-Algorithm": components["headers"]["Tus-Checksum-Algorithm"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description GONE: the resource existed but no longer takes this request */
            410: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getUploadOffset: {
        parameters: {
            query?: never;
            header: {
                /** @description The tus protocol version the client speaks: it must be 1.0.0 */
                "Tus-Resumable": components["parameters"]["Tus-Resumable"];
            };
            path: {
                /** @description The capability the signed link carries */
                token: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The upload's offset, declared length and expiry; never cached */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Upload-Offset": components["headers"]["Upload-Offset"];
                    "Upload-Length": components["headers"]["Upload-Length"];
                    "Upload-Expires": components["headers"]["Upload-Expires"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description GONE: the resource existed but no longer takes this request */
            410: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description PRECONDITION_FAILED: the request does not send `Tus-Resumable: 1.0.0` */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UPLOAD_LOCKED: another request is writing this upload; retry shortly */
            423: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    appendUpload: {
        parameters: {
            query?: never;
            header: {
                /** @description The tus protocol version the client speaks: it must be 1.0.0 */
                "Tus-Resumable": components["parameters"]["Tus-Resumable"];
                /** @description The offset the body's bytes go at: the upload's current offset (HEAD tells it) */
                "Upload-Offset": components["parameters"]["Upload-Offset"];
                /** @description The checksum of this request's body: `sha1` or `sha256`, a space, the base64 digest. A mismatch keeps nothing of the request (460) */
                "Upload-Checksum"?: components["parameters"]["Upload-Checksum"];
            };
            path: {
                /** @description The capability the signed link carries */
                token: string;
            };
            cookie?: never;
        };
        /** @description The upload's next bytes, from Upload-Offset */
        requestBody: {
            content: {
                "application/offset+octet-stream": string;
            };
        };
        responses: {
            /** @description Appended: Upload-Offset is the new offset */
            204: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Upload-Offset": components["headers"]["Upload-Offset"];
                    "Upload-Expires": components["headers"]["Upload-Expires"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description OFFSET_MISMATCH: Upload-Offset is not the upload's offset; resume from the one this answer gives */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Upload-Offset": components["headers"]["Upload-Offset"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description GONE: the resource existed but no longer takes this request */
            410: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description PRECONDITION_FAILED: the request does not send `Tus-Resumable: 1.0.0` */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UPLOAD_LOCKED: another request is writing this upload; retry shortly */
            423: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description CHECKSUM_MISMATCH: the bytes do not match Upload-Checksum; nothing of this request was kept */
            460: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description INSUFFICIENT_STORAGE: the server's storage is full; nothing of this request was stored */
            507: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Tus-Resumable": components["headers"]["Tus-Resumable"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    downloadFile: {
        parameters: {
            query?: never;
            header?: {
                /** @description One byte range: `bytes=a-b`, `bytes=a-` or `bytes=-n` */
                Range?: components["parameters"]["Range"];
            };
            path: {
                /** @description The capability the signed link carries */
                token: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The whole file, as the media type it was sent with */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Accept-Ranges": components["headers"]["Accept-Ranges"];
                    "Content-Disposition": components["headers"]["Content-Disposition"];
                    [name: string]: unknown;
                };
                content: {
                    "*/*": string;
                };
            };
            /** @description The bytes the Range asked for */
            206: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Accept-Ranges": components["headers"]["Accept-Ranges"];
                    "Content-Disposition": components["headers"]["Content-Disposition"];
                    "Content-Range": components["headers"]["Content-Range"];
                    [name: string]: unknown;
                };
                content: {
                    "*/*": string;
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description GONE: the resource existed but no longer takes this request */
            410: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RANGE_NOT_SATISFIABLE: the Range names no byte of the file (Content-Range gives its size) */
            416: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Content-Range": components["headers"]["Content-Range"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    listRequests: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestLinkList"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    createRequest: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
                /** @description The slug of the connected agent of the account this request acts as */
                "X-Service-Agent"?: components["parameters"]["X-Service-Agent"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RequestLinkCreation"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IssuedRequestLink"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getRequest: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestLink"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    revokeRequest: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestLink"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getRequestByToken: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The link's token (`hrq_…`) */
                token: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PublicRequest"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description GONE: the resource existed but no longer takes this request */
            410: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    sendToRequest: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path: {
                /** @description The link's token (`hrq_…`) */
                token: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RequestTransferCreation"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTransfer"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description GONE: the resource existed but no longer takes this request */
            410: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    confirmRequestTransfer: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path: {
                /** @description The link's token (`hrq_…`) */
                token: string;
                transfer_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConfirmedRequestTransfer"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description GONE: the resource existed but no longer takes this request */
            410: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    listReceipts: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReceiptList"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    postReceipt: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PostedReceipt"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RecordedReceipt"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FORBIDDEN, or a limit of the plan (QUOTA_EXCEEDED, KEY_LIMIT_REACHED, EMAIL_NOT_VERIFIED) */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getTransferHistory: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["History"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getAgentHistory: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["History"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getAudit: {
        parameters: {
            query?: {
                /** @description Events at or after this time */
                from?: string;
                /** @description Events at or before this time */
                to?: string;
                /** @description Only events of these types (repeat the parameter for several) */
                type?: string | string[];
                /** @description `next_cursor` of the previous page */
                cursor?: string;
                /** @description Page size */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuditPage"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getComplianceReport: {
        parameters: {
            query: {
                /** @description The month, YYYY-MM */
                month: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The report: JSON, or with `Accept: text/csv` one `metric,value` row per figure */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ComplianceReport"];
                    "text/csv": string;
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getLogKey: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LogKey"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getLogCheckpoint: {
        parameters: {
            query?: {
                /** @description A checkpoint signed before */
                tree_size?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A C2SP signed note; a kept one (with `tree_size`) may be cached for good */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getLogEntry: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The event's position, as history shows it */
                position: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LogLeaf"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getInclusionProof: {
        parameters: {
            query: {
                leaf_index: number;
                tree_size: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InclusionProof"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getConsistencyProof: {
        parameters: {
            query: {
                from: number;
                to: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConsistencyProof"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    getAuditExport: {
        parameters: {
            query?: {
                /** @description Events at or after this time */
                from?: string;
                /** @description Events at or before this time */
                to?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description NDJSON: first {"checkpoint": <signed note>}, then {"leaf_index", "entry", "inclusion"} per entry in log order */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/x-ndjson": string;
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    publishBroadcast: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BroadcastPublication"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Broadcast"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    listBroadcasts: {
        parameters: {
            query?: {
                /** @description Only broadcasts of this severity */
                severity?: components["schemas"]["BroadcastSeverity"];
                /** @description Page size */
                limit?: number;
                /** @description Broadcasts to skip */
                offset?: number;
            };
            header?: {
                /** @description The slug of the connected agent of the account this request acts as */
                "X-Service-Agent"?: components["parameters"]["X-Service-Agent"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BroadcastPage"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    markBroadcastRead: {
        parameters: {
            query?: never;
            header?: {
                /** @description The slug of the connected agent of the account this request acts as */
                "X-Service-Agent"?: components["parameters"]["X-Service-Agent"];
            };
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BroadcastRead"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description RATE_LIMITED: too many requests; retry after the seconds of Retry-After */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    createAccount: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AccountCreation"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreatedAccount"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    changePlan: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PlanChange"];
            };
        };
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Account"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    eraseAccount: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path: {
                /** @description The resource's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Erasure"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description NOT_FOUND: no such resource visible to the caller */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    erasePerson: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PersonErasure"];
            };
        };
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Erasure"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
    advanceClock: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT */
                "Idempotency-Key"?: components["parameters"]["Idempotency-Key"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ClockAdvance"];
            };
        };
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ClockTime"];
                };
            };
            /** @description The request is invalid: VALIDATION_ERROR naming the field in `details`, or a more specific code */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNAUTHORIZED: the credential is missing, of the wrong kind, invalid, revoked or expired */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A conflict with the current state (IDEMPOTENCY_CONFLICT when an Idempotency-Key was used with another request) */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description FILE_TOO_LARGE or PAYLOAD_TOO_LARGE: a limit on the body or the storage was reached */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description UNSUPPORTED_MEDIA_TYPE: the body is not of the media type this operation takes */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description SERVICE_UNAVAILABLE: a dependency (the database, the event store, blob storage) is away; retry after the seconds of Retry-After */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            "4XX": components["responses"]["ProtocolRefusal"];
        };
    };
}
