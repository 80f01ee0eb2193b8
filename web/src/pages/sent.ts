import type { Transfer } from "@handoff/sdk/types";
import { api, messageOf } from "../api.js";
import { h, replace, statusLine } from "../dom.js";
import type { Page } from "../router.js";
import { datesOf, deleteButton, downloadsWords, transferCard } from "../transfer-card.js";

/** The transfers this person sent to agents, newest first, with how often each was downloaded. */
export const sentPage: Page = {
  title: "Sent",
  needsSession: true,
  async render({ main }) {
    const list = h("section", { "aria-labelledby": "sent-heading" });
    replace(main, h("h1", {}, "Sent files"), list);
    try {
      await drawSent(list);
    } catch (error) {
      replace(list, h("p", { class: "status", role: "alert", "data-kind": "error" }, messageOf(error)));
    }
  },
};

async function drawSent(list: HTMLElement) {
  const { transfers, total } = await api<{ transfers: Transfer[]; total: number }>(
    "/v1/transfers?direction=sent&limit=100",
  );
  const redraw = () => void drawSent(list);
  replace(
    list,
    h(
      "div",
      { class: "row-between" },
      h("h2", { id: "sent-heading" }, `Transfers you sent (${total})`),
      h("button", { type: "button", class: "secondary", onclick: redraw }, "Refresh"),
    ),
    transfers.length === 0
      ? h(
          "p",
          { class: "empty" },
          "Nothing sent yet. ",
          h("a", { href: "/send", "data-route": true }, "Send a file to an agent"),
          ".",
        )
      : h(
          "ul",
          { class: "transfers" },
          transfers.map((transfer) => {
            const status = statusLine();
            return transferCard(transfer, {
              party: `To ${transfer.recipient}`,
              meta: h(
                "p",
                { class: "meta" },
                `${datesOf(transfer, "Sent")} · `,
                h("span", { class: "downloads" }, downloadsWords(transfer.downloads, transfer.max_downloads)),
              ),
              actions: [h("div", { class: "row" }, deleteButton(transfer, status, redraw)), status],
            });
          }),
        ),
  );
}
