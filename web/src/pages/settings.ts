import type { ApiKeyList, Connection, ConnectionList, IssuedApiKey } from "@handoff/sdk/types";
import { api, messageOf } from "../api.js";
import { type Confirmation, confirmThen } from "../confirm.js";
import { type Child, copyButton, field, h, replace, showStatus, statusLine } from "../dom.js";
import { actionForm, passwordInput } from "../form.js";
import { formatDate } from "../format.js";
import { fetchReceivingKey } from "../receiving-key.js";
import type { Page } from "../router.js";
import { currentSession } from "../session.js";
import { drawAgentWebhooks } from "./agent-webhooks.js";
import { newPasswordFields } from "./password-fields.js";
import { receivingPasswordForm } from "./receiving-password.js";

export const settingsPage: Page = {
  title: "Settings",
  needsSession: true,
  async render({ main }) {
    const session = currentSession();
    if (!session) return;
    const account = session.account;
    const keys = h("section", { "aria-labelledby": "keys-heading" });
    const connections = h("section", { "aria-labelledby": "connections-heading" });
    const webhooks = h("section", { "aria-labelledby": "webhooks-heading" });
    const receiving = h("section", { "aria-labelledby": "receiving-heading" });
    const login = h("section", { "aria-labelledby": "login-password-heading" }, ...loginPasswordSection());
    replace(
      main,
      h("h1", {}, "Settings"),
      h(
        "section",
        { "aria-labelledby": "account-heading" },
        h("h2", { id: "account-heading" }, "Account"),
        h(
          "dl",
          { class: "facts" },
          h("dt", {}, "E-mail"),
          h("dd", {}, account.email),
          h("dt", {}, "Name"),
          h("dd", {}, account.name ?? "—"),
          h("dt", {}, "Plan"),
          h("dd", {}, account.plan),
        ),
      ),
      login,
      receiving,
      keys,
      webhooks,
      connections,
    );
    await Promise.all([
      drawReceiving(receiving),
      drawKeys(keys, account.id),
      drawAgentWebhooks(webhooks),
      drawConnections(connections),
    ]);
  },
};

/** Decisions 4.3: a new login password, given the current one; the account's other sessions end. */
function loginPasswordSection(): Child[] {
  const current = passwordInput("current-password", "current-password");
  const next = newPasswordFields("New login password");
  const form = actionForm({
    fields: [field("Current login password", current), ...next.fields],
    submit: "Change login password",
    working: "Changing your login password…",
    async action(status) {
      await api("/v1/auth/password", {
        method: "PUT",
        json: { current_password: current.value, new_password: next.value() },
      });
      form.reset();
      showStatus(status, "Login password changed. Every other session of your account was logged out.", "ok");
    },
  });
  return [
    h("h2", { id: "login-password-heading" }, "Login password"),
    h(
      "p",
      {},
      "The password you log in with. Changing it logs out your other sessions; your receiving password stays as it is.",
    ),
    form,
  ];
}

async function drawReceiving(section: HTMLElement) {
  const key = await fetchReceivingKey().catch(() => null);
  replace(
    section,
    h("h2", { id: "receiving-heading" }, "Receiving password"),
    h(
      "p",
      {},
      key
        ? `Your receiving key is at version ${key.key_version}. A new password makes a new key: files sent from now on use it; files already sent to you stay encrypted to the old key and can no longer be opened here, so download them first.`
        : "Not set yet: files sent to you wait until it is.",
    ),
    receivingPasswordForm(key !== null, () => void drawReceiving(section)),
  );
}

async function drawKeys(section: HTMLElement, accountId: string) {
  const status = statusLine();
  const name = h("input", { type: "text", name: "key-name", required: true, maxlength: 200 });
  const redraw = () => drawKeys(section, accountId);
  const form = actionForm({
    layout: "inline",
    fields: [field("Name of a new key", name)],
    submit: "Create API key",
    async action() {
      const created = await api<IssuedApiKey>("/v1/api-keys", {
        method: "POST",
        json: { name: name.value.trim() },
      });
      await redraw();
      section.append(
        h(
          "div",
          { class: "notice", role: "status" },
          h("p", {}, `New key “${created.name}”: copy it now and keep it secret. It is not shown again.`),
          h(
            "div",
            { class: "row" },
            h("code", { class: "secret" }, created.api_key),
            copyButton(created.api_key, "Copy key"),
          ),
        ),
      );
    },
  });
  let list: HTMLElement;
  try {
    const { api_keys } = await api<ApiKeyList>("/v1/api-keys");
    list =
      api_keys.length === 0
        ? h("p", { class: "empty" }, "No API keys. Agents and scripts use one to act for your account.")
        : h(
            "table",
            {},
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                h("th", { scope: "col" }, "Name"),
                h("th", { scope: "col" }, "Created"),
                h("td", {}),
              ),
            ),
            h(
              "tbody",
              {},
              api_keys.map((key) =>
                h(
                  "tr",
                  {},
                  h("td", {}, key.name),
                  h("td", {}, formatDate(key.created_at)),
                  h(
                    "td",
                    {},
                    h(
                      "button",
                      {
                        type: "button",
                        class: "danger",
                        "aria-label": `Revoke ${key.name}`,
                        onclick: () =>
                          void confirmThen(
                            {
                              title: `Revoke the key “${key.name}”?`,
                              message:
                                "Whatever uses this key (an agent, a script) is refused from now on. This cannot be undone: a new key would have to be created and given to it.",
                              confirm: "Revoke key",
                            },
                            () => api(`/v1/accounts/${accountId}/api-keys/${key.id}`, { method: "DELETE" }),
                          )
                            .then(redraw)
                            .catch((error) => showStatus(status, messageOf(error), "error")),
                      },
                      "Revoke",
                    ),
                  ),
                ),
              ),
            ),
          );
  } catch (error) {
    list = h("p", { class: "status", "data-kind": "error", role: "alert" }, messageOf(error));
  }
  replace(section, h("h2", { id: "keys-heading" }, "API keys"), list, form, status);
}

const CONNECTION_WORDS: Record<Connection["status"], string> = {
  pending: "Pending",
  active: "Connected",
  declined: "Declined",
  revoked: "Ended",
};

async function drawConnections(section: HTMLElement) {
  const status = statusLine();
  const redraw = () => drawConnections(section);
  const act = (path: string, method: string, ask?: Confirmation) => () =>
    void (ask ? confirmThen(ask, () => api(path, { method })) : api(path, { method }))
      .then(redraw)
      .catch((error) => showStatus(status, messageOf(error), "error"));
  const peer = h("input", { type: "email", name: "peer", required: true });
  const form = actionForm({
    layout: "inline",
    fields: [field("E-mail of an account to connect with", peer)],
    submit: "Send invitation",
    async action() {
      await api("/v1/connections", { method: "POST", json: { account: peer.value.trim() } });
      await redraw();
    },
  });
  let list: HTMLElement;
  try {
    const { connections } = await api<ConnectionList>("/v1/connections");
    const live = connections.filter((c) => c.status === "pending" || c.status === "active");
    list =
      live.length === 0
        ? h(
            "p",
            { class: "empty" },
            "No connections yet. Connected accounts can send to each other's agents; the other side accepts your invitation.",
          )
        : h(
            "ul",
            { class: "connections" },
            live.map((c) =>
              h(
                "li",
                {},
                h("span", {}, `${c.peer_account.name} (${c.peer_account.email_masked})`),
                h("span", { class: `badge ${c.status}` }, CONNECTION_WORDS[c.status]),
                c.status === "pending" && c.direction === "incoming"
                  ? [
                      h(
                        "button",
                        { type: "button", onclick: act(`/v1/connections/${c.id}/accept`, "POST") },
                        "Accept",
                      ),
                      h(
                        "button",
                        {
                          type: "button",
                          class: "secondary",
                          onclick: act(`/v1/connections/${c.id}/decline`, "POST"),
                        },
                        "Decline",
                      ),
                    ]
                  : h(
                      "button",
                      {
                        type: "button",
                        class: "danger",
                        onclick: act(`/v1/connections/${c.id}`, "DELETE", {
                          title:
                            c.status === "pending"
                              ? `Withdraw the invitation to ${c.peer_account.name}?`
                              : `Disconnect from ${c.peer_account.name}?`,
                          message:
                            c.status === "pending"
                              ? "The invitation ends; you can send a new one later."
                              : "Your agents and theirs can no longer send to each other. This cannot be undone: connecting again takes a new invitation that they accept.",
                          confirm: c.status === "pending" ? "Withdraw" : "Disconnect",
                        }),
                      },
                      c.status === "pending" ? "Withdraw" : "Disconnect",
                    ),
              ),
            ),
          );
  } catch (error) {
    list = h("p", { class: "status", "data-kind": "error", role: "alert" }, messageOf(error));
  }
  replace(section, h("h2", { id: "connections-heading" }, "Connections"), list, form, status);
}
