import { writeFileSync } from "node:fs";
import { OPENAPI_FILE, openApiText, SDK_TYPES_FILE, sdkTypesText } from "./contract-documents.js";

writeFileSync(OPENAPI_FILE, openApiText());
writeFileSync(SDK_TYPES_FILE, await sdkTypesText());
console.log(`wrote ${OPENAPI_FILE} and ${SDK_TYPES_FILE}`);
