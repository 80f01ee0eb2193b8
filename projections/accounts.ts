import type { AccountEvent } from "../domain/account.js";
import { categoryOf, idOf } from "../domain/streams.js";
import { asDomainEvent, type Projection } from "./projection.js";

export const accountsProjection: Projection = {
  name: "accounts",
  tables: ["accounts"],
  async apply(trx, recorded) {
    if (categoryOf(recorded.streamId) !== "account") return;
    const event = asDomainEvent<AccountEvent>(recorded);
    const id = idOf(recorded.streamId);
    switch (event.type) {
      case "AccountCreated": {
        const { email, name, plan, createdAt } = event.data;
        await trx("accounts").insert({ id, email, name, plan, created_at: createdAt });
        return;
      }
      case "AccountPlanChanged":
        await trx("accounts").where({ id }).update({ plan: event.data.plan });
        return;
      default:
        return;
    }
  },
};
