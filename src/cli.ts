#!/usr/bin/env -S node --v8-pool-size=0
import { errorLine, UsageError } from "./cli-errors.js";
import { handoffProgram } from "./cli-program.js";

handoffProgram()
  .parseAsync(process.argv)
  .catch((error: unknown) => {
    console.error(
      error instanceof UsageError ? `${error.message} (handoff help lists the commands)` : errorLine(error),
    );
    process.exit(1);
  });
