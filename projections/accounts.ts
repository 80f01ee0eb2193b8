import { type AccountEvent, accountKindOf } from "../domain/account.js";
import { categoryProjection } from "./projection.js";

export const accountsProjection = categoryProjection<AccountEvent>({
  name: "accounts",
  tables: ["accounts"],
  category: "account",
  async apply(trx, event, id) {
    switch (event.type) {
      case "AccountCreated": {
        const { email, name, plan, createdAt } = event.data;
        await trx("accounts").insert({
          id,
          email,
          name,
          plan,
          kind: accountKindOf(event.data),
          created_at: createdAt,
        });
        return;
      }
      case "AccountPlanChanged":
        await trx("accounts").where({ id }).update({ plan: event.data.plan });
        return;
      default:
        return;
    }
  },
});
