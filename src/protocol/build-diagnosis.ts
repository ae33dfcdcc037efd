/**
 * `diagnose-build-failure` (H7): match a build/test log against a catalog of known error
 * patterns per language and suggest a fix. Pure: text in, diagnosis out.
 */

/** The diagnosis (Go's `Diagnosis` keys; `evidence` is ours: the log line that matched). */
export interface BuildDiagnosis {
  diagnosis: string;
  confidence: number;
  fix: string;
  rationale: string;
  auto_fixable: boolean;
  /** The first log line matching the pattern (absent for `unknown`). */
  evidence?: string;
}

interface ErrorPattern {
  name: string;
  /** Matched per line; a named group `name` is substituted for `<name>` in `fix`. */
  pattern: RegExp;
  fix: string;
  rationale: string;
  autoFixable: boolean;
  confidence: number;
}

export type DiagnosisLanguage = 'go' | 'rust' | 'javascript' | 'typescript' | 'python';

const scriptPatterns: ErrorPattern[] = [
  { name: 'import_path_invalid', pattern: /Cannot find module '\.{1,2}\/[^']*'|Can't resolve '\.{1,2}\/[^']*'|Relative import paths need explicit file extensions|File '.*' is not a module|TS2307: Cannot find module '\./, fix: 'Fix the relative import path (the file name and, under NodeNext, the .js extension)', rationale: 'A relative import points at a file that does not exist at that path', autoFixable: false, confidence: 0.9 },
  { name: 'module_not_found', pattern: /Cannot find module '(?<name>(?:@[\w.-]+\/)?\w[\w.-]*)[^']*'|Module not found: .*?Can't resolve '(?<name2>(?:@[\w.-]+\/)?\w[\w.-]*)[^']*'|ERR_MODULE_NOT_FOUND.*?package '(?<name3>[^']+)'|Cannot find package '(?<name4>[^']+)'/, fix: 'npm install <name>', rationale: 'The package is imported but not installed (missing from package.json or node_modules)', autoFixable: true, confidence: 0.95 },
  { name: 'missing_export', pattern: /has no exported member|does not provide an export named|TS2305|TS2724|is not exported from/, fix: 'Export the symbol from its module, or import the name the module actually exports (check the interface contract)', rationale: 'The importing file expects a name the other module does not export — usually another agent changed or has not yet added it', autoFixable: false, confidence: 0.9 },
  { name: 'property_not_exist', pattern: /Property '[^']+' does not exist on type|TS2339|TS2551/, fix: 'Check the type definition and the interface contract; add the property or use the right name', rationale: 'The code uses a member the type does not declare', autoFixable: false, confidence: 0.9 },
  { name: 'type_mismatch', pattern: /Type '.*' is not assignable to type|Argument of type '.*' is not assignable to parameter|TS2322|TS2345/, fix: 'Make the value match the declared type, or correct the declaration if the contract changed', rationale: 'A value does not have the type its target declares', autoFixable: false, confidence: 0.85 },
  { name: 'argument_count', pattern: /Expected \d+(?:-\d+)? arguments?, but got \d+|TS2554|TS2555/, fix: 'Update the call sites to the function’s current signature (E47 caller cascade when another agent changed it)', rationale: 'A call passes a different number of arguments than the function declares', autoFixable: false, confidence: 0.85 },
  { name: 'type_any_implicit', pattern: /implicitly has an? '?any'? type|TS7006|TS7031/, fix: 'Add an explicit type annotation', rationale: 'Strict mode forbids implicit any', autoFixable: false, confidence: 0.85 },
  { name: 'name_not_found', pattern: /Cannot find name '[^']+'|TS2304|ReferenceError: \S+ is not defined/, fix: 'Import or declare the name', rationale: 'The code refers to a name that is not in scope', autoFixable: false, confidence: 0.85 },
  { name: 'syntax_error', pattern: /SyntaxError: |TS1005|TS1128|TS1109|Unexpected token|Unterminated string/, fix: 'Fix the syntax at the reported line (a missing bracket, comma or quote)', rationale: 'The file does not parse', autoFixable: false, confidence: 0.8 },
  { name: 'test_failure', pattern: /^\s*(?:FAIL|✗|×)\s|Tests?:\s+\d+ failed|AssertionError|expected .* to (?:be|equal)/, fix: 'Read the failing assertion; fix the code (or the test if the contract changed)', rationale: 'The code builds but a test fails', autoFixable: false, confidence: 0.6 },
];

const catalogs: Record<DiagnosisLanguage, ErrorPattern[]> = {
  go: [
    { name: 'missing_module', pattern: /no required module provides package (?<name>\S+?);|cannot find package "(?<name2>[^"]+)"|missing go\.sum entry for module providing package (?<name3>\S+)/, fix: 'go get <name> && go mod tidy', rationale: 'The package is imported but the module is not required in go.mod (or not in go.sum)', autoFixable: true, confidence: 0.95 },
    { name: 'go_sum_missing', pattern: /missing go\.sum entry|verifying .*: checksum mismatch/, fix: 'go mod tidy', rationale: 'go.sum does not hold the checksums the build needs', autoFixable: true, confidence: 0.95 },
    { name: 'unused_import', pattern: /"[^"]+" imported and not used/, fix: 'Remove the import (goimports -w <file>)', rationale: 'Go refuses unused imports', autoFixable: true, confidence: 0.95 },
    { name: 'unused_variable', pattern: /declared and not used|declared but not used/, fix: 'Use the variable or remove it (assign to _ if intentional)', rationale: 'Go refuses unused local variables', autoFixable: false, confidence: 0.9 },
    { name: 'signature_mismatch', pattern: /not enough arguments in call|too many arguments in call|assignment mismatch: \d+ variables? but/, fix: 'Update the call sites to the new signature (E47 caller cascade when another agent changed it)', rationale: 'A function’s parameters or results changed and its callers were not updated', autoFixable: false, confidence: 0.9 },
    { name: 'undefined_identifier', pattern: /undefined: \S+|has no field or method \S+/, fix: 'Define the identifier or import its package; check the interface contract and the other agents’ files', rationale: 'The code uses a name the package does not declare (yet)', autoFixable: false, confidence: 0.9 },
    { name: 'interface_not_implemented', pattern: /does not implement .*\(missing method|\(wrong type for method/, fix: 'Implement the missing method with the exact signature the interface declares', rationale: 'A type is used as an interface it does not satisfy', autoFixable: false, confidence: 0.9 },
    { name: 'type_mismatch', pattern: /cannot use .* as .* (?:value|type) in|mismatched types/, fix: 'Convert the value or correct the declared type', rationale: 'A value does not have the type its target declares', autoFixable: false, confidence: 0.85 },
    { name: 'duplicate_declaration', pattern: /redeclared in this block|other declaration of/, fix: 'Remove or rename one of the declarations (E41: two agents added the same name)', rationale: 'The same name is declared twice in one package', autoFixable: false, confidence: 0.9 },
    { name: 'import_cycle', pattern: /import cycle not allowed/, fix: 'Move the shared types to a package both import (a scaffold, E22)', rationale: 'Two packages import each other', autoFixable: false, confidence: 0.9 },
    { name: 'syntax_error', pattern: /syntax error: /, fix: 'Fix the syntax at the reported line', rationale: 'The file does not parse', autoFixable: false, confidence: 0.85 },
    { name: 'test_failure', pattern: /^--- FAIL: |^FAIL\s/, fix: 'Read the failing test output; fix the code (or the test if the contract changed)', rationale: 'The code builds but a test fails', autoFixable: false, confidence: 0.6 },
  ],
  rust: [
    { name: 'unresolved_import', pattern: /error\[E0432\]: unresolved import `(?<name>[\w]+)|error\[E0433\]: failed to resolve: use of undeclared crate or module `(?<name2>\w+)`/, fix: 'Add <name> to [dependencies] in Cargo.toml (cargo add <name>) or fix the use path', rationale: 'The crate or module in the use path does not exist', autoFixable: true, confidence: 0.9 },
    { name: 'crate_not_found', pattern: /error\[E0463\]: can't find crate for `(?<name>\w+)`/, fix: 'cargo add <name>', rationale: 'The crate is not a dependency', autoFixable: true, confidence: 0.95 },
    { name: 'not_found_in_scope', pattern: /error\[E0425\]|error\[E0412\]|error\[E0422\]|cannot find (?:value|function|type|struct|macro) `/, fix: 'Import the item (use …) or declare it; check the interface contract', rationale: 'The code uses a name that is not in scope', autoFixable: false, confidence: 0.85 },
    { name: 'missing_field_or_method', pattern: /error\[E0599\]|error\[E0609\]|no (?:method|field) named `/, fix: 'Use the right name or add the method/field to the type', rationale: 'The type has no such member', autoFixable: false, confidence: 0.85 },
    { name: 'type_mismatch', pattern: /error\[E0308\]: mismatched types/, fix: 'Convert the value or correct the declared type', rationale: 'A value does not have the expected type', autoFixable: false, confidence: 0.9 },
    { name: 'argument_count', pattern: /error\[E0061\]: this (?:function|method) takes \d+ arguments?/, fix: 'Update the call sites to the new signature (E47 caller cascade)', rationale: 'A call passes a different number of arguments than the function declares', autoFixable: false, confidence: 0.9 },
    { name: 'trait_bound', pattern: /error\[E0277\]|the trait bound .* is not satisfied|error\[E0046\]: not all trait items implemented/, fix: 'Implement the trait (or derive it) for the type, or change the bound', rationale: 'A type is used where a trait it does not implement is required', autoFixable: false, confidence: 0.85 },
    { name: 'borrow_check', pattern: /error\[E05(?:0[1-9]|[1-9]\d)\]|borrow of moved value|cannot borrow .* as mutable|does not live long enough/, fix: 'Clone, borrow instead of moving, or restructure the lifetimes at the reported line', rationale: 'The borrow checker rejects an ownership or lifetime conflict', autoFixable: false, confidence: 0.85 },
    { name: 'duplicate_definition', pattern: /error\[E0428\]: the name `\w+` is defined multiple times/, fix: 'Remove or rename one of the definitions (E41: two agents added the same name)', rationale: 'The same name is defined twice in one module', autoFixable: false, confidence: 0.9 },
    { name: 'syntax_error', pattern: /error: expected .*, found |error: unexpected closing delimiter|this file contains an unclosed delimiter/, fix: 'Fix the syntax at the reported line', rationale: 'The file does not parse', autoFixable: false, confidence: 0.8 },
    { name: 'test_failure', pattern: /^test .* \.\.\. FAILED|test result: FAILED/, fix: 'Read the failing test output; fix the code (or the test if the contract changed)', rationale: 'The code builds but a test fails', autoFixable: false, confidence: 0.6 },
  ],
  javascript: scriptPatterns,
  typescript: scriptPatterns,
  python: [
    { name: 'module_not_found', pattern: /ModuleNotFoundError: No module named '(?<name>[\w-]+)|ImportError: No module named '?(?<name2>[\w-]+)/, fix: 'pip install <name> (and add it to requirements.txt / pyproject.toml)', rationale: 'The module is imported but not installed', autoFixable: true, confidence: 0.95 },
    { name: 'import_name_missing', pattern: /ImportError: cannot import name '[^']+'/, fix: 'Import a name the module defines, or add it to the module (check the interface contract); circular imports also cause this', rationale: 'The module exists but does not define the imported name (yet)', autoFixable: false, confidence: 0.9 },
    { name: 'syntax_error', pattern: /SyntaxError: |IndentationError: |TabError: /, fix: 'Fix the syntax or indentation at the reported line', rationale: 'The file does not parse', autoFixable: false, confidence: 0.9 },
    { name: 'name_not_defined', pattern: /NameError: name '[^']+' is not defined/, fix: 'Import or define the name', rationale: 'The code uses a name that is not in scope', autoFixable: false, confidence: 0.85 },
    { name: 'attribute_missing', pattern: /AttributeError: .* has no attribute '[^']+'/, fix: 'Use the right attribute name or add it to the class/module', rationale: 'The object has no such attribute', autoFixable: false, confidence: 0.8 },
    { name: 'argument_mismatch', pattern: /TypeError: .*(?:missing \d+ required (?:positional|keyword)|takes \d+ positional arguments? but \d+|got an unexpected keyword argument)/, fix: 'Update the call sites to the function’s current signature (E47 caller cascade)', rationale: 'A call does not match the function’s parameters', autoFixable: false, confidence: 0.85 },
    { name: 'type_check_error', pattern: /error: .*\[(?:arg-type|assignment|return-value|attr-defined|call-arg|union-attr|override)\]/, fix: 'Fix the types mypy/pyright reports at the line', rationale: 'The static type checker rejects the code', autoFixable: false, confidence: 0.8 },
    { name: 'test_failure', pattern: /^FAILED |^=+ .*\d+ failed|AssertionError/, fix: 'Read the failing assertion; fix the code (or the test if the contract changed)', rationale: 'The code runs but a test fails', autoFixable: false, confidence: 0.6 },
  ],
};

/** `--language` spellings → catalog. */
export const diagnosisLanguages: Readonly<Record<string, DiagnosisLanguage>> = {
  go: 'go', golang: 'go', rust: 'rust', rs: 'rust', js: 'javascript', javascript: 'javascript', node: 'javascript', ts: 'typescript', typescript: 'typescript', python: 'python', py: 'python',
};

/**
 * Diagnoses a log: the pattern that matches the earliest line wins (the first error of a build
 * is usually the cause of the rest; Go takes the first pattern of its catalog that matches
 * anywhere); among patterns matching the same line, catalog order. `<name>` in the fix becomes
 * the captured package. No match → `unknown` with confidence 0.
 */
export function diagnoseBuildFailure(log: string, language: DiagnosisLanguage): BuildDiagnosis {
  const lines = log.split(/\r?\n/);
  for (const line of lines) {
    for (const entry of catalogs[language]) {
      const match = entry.pattern.exec(line);
      if (!match) continue;
      const name = Object.values(match.groups ?? {}).find((value) => value !== undefined);
      return {
        diagnosis: entry.name,
        confidence: entry.confidence,
        fix: name ? entry.fix.replaceAll('<name>', name) : entry.fix,
        rationale: entry.rationale,
        auto_fixable: entry.autoFixable,
        evidence: line.trim().slice(0, 300),
      };
    }
  }
  return { diagnosis: 'unknown', confidence: 0, fix: 'Manual investigation required', rationale: 'No known pattern matched this error', auto_fixable: false };
}
