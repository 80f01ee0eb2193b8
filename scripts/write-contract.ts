import { writeFileSync } from "node:fs";
import {
  mcpToolsText,
  OPENAPI_FILE,
  openApiText,
  PYTHON_TOOLS_FILE,
  SDK_TYPES_FILE,
  sdkTypesText,
} from "./contract-documents.js";

writeFileSync(OPENAPI_FILE, openApiText());
writeFileSync(SDK_TYPES_FILE, await sdkTypesText());
writeFileSync(PYTHON_TOOLS_FILE, await mcpToolsText());
console.log(`wrote ${OPENAPI_FILE}, ${SDK_TYPES_FILE} and ${PYTHON_TOOLS_FILE}`);
