export { parseYamlSafe, defaultMaxYamlBytes, defaultMaxYamlDepth, type ParseYamlOptions, type YamlParseResult } from './safe-parse.js';
export { toPlain, nodeToPlain, scalarToPlain, plainKeyOf, defaultMaxAliasCount, type ToPlainOptions } from './to-plain.js';
export { locatePath, formatPath, parsePath, resolvePath, type YamlPath, type SourcePosition, type PathStep, type PathResolution } from './locate.js';
export { applyEdits, detectYamlStyle, type YamlEdit, type YamlStyle, type ApplyEditsOptions } from './edit.js';
