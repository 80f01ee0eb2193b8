/** Decisions 7.3: the file-name rule, shared with every client (packages/sdk/src/file-names.ts). */
export {
  fileNameProblem,
  MAX_FILES_PER_TRANSFER,
  MAX_NAME_BYTES,
  MAX_SEGMENT_BYTES,
  MAX_SEGMENTS,
  segmentsOf,
} from "@handoff/sdk/file-names";
