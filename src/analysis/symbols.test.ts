import { describe, expect, it } from 'vitest';
import { extractMembers, extractTopLevelSymbols, packageOf } from './symbols.js';

function summary(filePath: string, text: string): string[] {
  return extractTopLevelSymbols(filePath, text).map((symbol) => `${symbol.line}:${symbol.kind}:${symbol.receiver ? `${symbol.receiver}.` : ''}${symbol.name}${symbol.exported ? '*' : ''}`);
}

describe('extractTopLevelSymbols — TypeScript/JavaScript', () => {
  it('finds top-level declarations with their export state', () => {
    const text = [
      'import { x } from "./x";', // 1
      'export interface Config { a: string }', // 2
      'export type Id = string;', // 3
      'type Local<T> = T[];', // 4
      'export class Service {', // 5
      '  method() { const inner = 1; }',
      '}',
      'export abstract class Base {}', // 8
      'export default function main() {}', // 9
      'export async function* stream() {}', // 10
      'export const enum Color { Red }', // 11
      'export enum Mode { A }', // 12
      'export const createThing = (x: number) => x;', // 13
      'export const handler: (a: number) => void = async (a) => {};', // 14
      'export const LIMIT = 10;', // 15
      'const helper = function () {};', // 16
      'let counter = 0;', // 17
      'export declare function declared(): void;', // 18
      '// export function inComment() {}', // 19
      'const text = "export function inString() {}";', // 20
      'function later() {}', // 21
      'export { later, counter as count };', // 22
      'export { fromOther } from "./other";', // 23
      'export default class extends Base {}', // 24
      'const constants = 1;', // 25
    ].join('\n');
    expect(summary('src/a.ts', text)).toEqual([
      '2:interface:Config*',
      '3:type:Id*',
      '4:type:Local',
      '5:class:Service*',
      '8:class:Base*',
      '9:function:main*',
      '10:function:stream*',
      '11:enum:Color*',
      '12:enum:Mode*',
      '13:function:createThing*',
      '14:function:handler*',
      '15:const:LIMIT*',
      '16:function:helper',
      '17:const:counter*',
      '18:function:declared*',
      '20:const:text',
      '21:function:later*',
      '25:const:constants',
    ]);
  });

  it('reads CommonJS exports', () => {
    const text = ['function a() {}', 'const b = 2;', 'exports.c = function () {};', 'module.exports.d = 4;', 'module.exports = { a, b };'].join('\n');
    expect(summary('lib/x.cjs', text)).toEqual(['1:function:a*', '2:const:b*', '3:function:c*', '4:const:d*']);
  });

  it('keeps overloads and merged declarations once', () => {
    const text = ['export function f(a: string): void;', 'export function f(a: number): void;', 'export function f(a: unknown) {}'].join('\n');
    expect(summary('a.ts', text)).toEqual(['1:function:f*']);
  });
});

describe('extractTopLevelSymbols — Go', () => {
  it('finds funcs, methods, types and grouped const/var/type declarations', () => {
    const text = [
      'package config', // 1
      '',
      'import (',
      '\t"fmt"',
      ')',
      '',
      'type Config struct {', // 7
      '\tName string `json:"name"`',
      '}',
      'type Loader interface{ Load() error }', // 10
      'type ID = string', // 11
      'type List[T any] struct{ items []T }', // 12
      'type Buf [4]byte', // 13
      'type (', // 14
      '\tOption func(*Config)', // 15
      '\tnested struct {', // 16
      '\t\tinner int',
      '\t}',
      ')',
      'const Version = "1"', // 20
      'const (', // 21
      '\tA = iota', // 22
      '\tb', // 23
      ')',
      'var ErrMissing, errOther = fmt.Errorf("x"), fmt.Errorf("y")', // 25
      'func New() *Config { return &Config{} }', // 26
      'func (c *Config) Validate() error { return nil }', // 27
      'func (l List[T]) Len() int { return len(l.items) }', // 28
      'func init() {}', // 29
      '// func Commented() {}',
      'var _ = fmt.Sprintf',
    ].join('\n');
    expect(summary('pkg/config/config.go', text)).toEqual([
      '7:struct:Config*',
      '10:interface:Loader*',
      '11:type:ID*',
      '12:struct:List*',
      '13:type:Buf*',
      '15:type:Option*',
      '16:struct:nested',
      '20:const:Version*',
      '22:const:A*',
      '23:const:b',
      '25:const:ErrMissing*',
      '25:const:errOther',
      '26:function:New*',
      '27:function:Config.Validate*',
      '28:function:List.Len*',
    ]);
  });

  it('extracts exported struct fields with json tags', () => {
    const text = ['package p', 'type Config struct {', '\tName string `json:"name"`', '\tRetries, Backoff int', '\tprivate bool', '\t*Embedded', '}', 'type hidden struct {', '\tShown int', '}'].join('\n');
    expect(extractMembers('p/c.go', text)).toEqual([
      { owner: 'Config', name: 'Name', kind: 'field', line: 3, hasJsonTag: true },
      { owner: 'Config', name: 'Retries', kind: 'field', line: 4, hasJsonTag: false },
      { owner: 'Config', name: 'Backoff', kind: 'field', line: 4, hasJsonTag: false },
    ]);
  });
});

describe('extractTopLevelSymbols — Python', () => {
  it('finds module-level defs, classes and assignments; _private and __all__ decide exports', () => {
    const text = [
      'import os', // 1
      'MAX = 3', // 2
      '_cache: dict = {}', // 3
      'timeout: float', // 4
      'def create_app():', // 5
      '    inner = 1',
      '    def nested(): pass',
      'async def fetch(): ...', // 8
      'class Config:', // 9
      '    x = 1',
      '@decorator',
      'def _helper(): pass', // 12
      'a, b = 1, 2', // 13
      'if DEBUG:',
      '    y = 2',
      'else:',
      '    y = 3',
      'print(MAX)',
      'x == 1',
      '"""docstring: not_a_name = 1"""',
    ].join('\n');
    expect(summary('app/main.py', text)).toEqual([
      '2:const:MAX*',
      '3:const:_cache',
      '4:const:timeout*',
      '5:function:create_app*',
      '8:function:fetch*',
      '9:class:Config*',
      '12:function:_helper',
      '13:const:a*',
      '13:const:b*',
    ]);
    expect(summary('m.py', '__all__ = [\n    "public",\n]\ndef public(): pass\ndef other(): pass\n')).toEqual(['4:function:public*', '5:function:other']);
  });

  it('X66-27: `__all__` as a tuple (with or without parentheses), grown by `+=`, `= __all__ + [...]`, `.append`, `.extend`', () => {
    const defs = 'def foo(): pass\ndef bar(): pass\ndef baz(): pass\ndef qux(): pass\ndef ext(): pass\n';
    const exported = (text: string) => summary('m.py', text).filter((entry) => entry.endsWith('*')).map((entry) => entry.split(':')[2]);
    expect(exported(`__all__ = ('foo',)\n__all__ += ['bar']\n__all__.append('baz')\n__all__.extend(\n    ['ext'],\n)\n${defs}`)).toEqual(['foo*', 'bar*', 'baz*', 'ext*']);
    expect(exported(`__all__ = 'foo', 'bar'\n${defs}`)).toEqual(['foo*', 'bar*']);
    expect(exported(`__all__ = ['foo']\n__all__ = __all__ + ['bar']\n${defs}`)).toEqual(['foo*', 'bar*']);
    // (a plain assignment starts over)
    expect(exported(`__all__ = ['foo']\n__all__ = ['qux']\n${defs}`)).toEqual(['qux*']);
  });
});

describe('extractTopLevelSymbols — Rust', () => {
  it('finds items with pub visibility; impl and mod bodies are not top-level', () => {
    const text = [
      'use std::fmt;', // 1
      'pub struct Config {', // 2
      '    pub name: String,',
      '}',
      'pub(crate) enum Mode { A, B }', // 5
      'pub trait Load { fn load(&self); }', // 6
      'type Alias = u32;', // 7
      'pub const MAX: u32 = 3;', // 8
      'static mut COUNTER: u32 = 0;', // 9
      'pub async fn run() {}', // 10
      'pub const fn build() -> u32 { 1 }', // 11
      'fn helper() {}', // 12
      '#[derive(Debug)] pub struct Tagged;', // 13
      'impl Config {',
      '    pub fn new() -> Self { todo!() }',
      '}',
      '#[cfg(test)]',
      'mod tests {',
      '    fn t() {}',
      '}',
      'pub fn r#match() {}', // 21
    ].join('\n');
    expect(summary('src/config.rs', text)).toEqual([
      '2:struct:Config*',
      '5:enum:Mode*',
      '6:trait:Load*',
      '7:type:Alias',
      '8:const:MAX*',
      '9:const:COUNTER',
      '10:function:run*',
      '11:function:build*',
      '12:function:helper',
      '13:struct:Tagged*',
      '21:function:match*',
    ]);
  });
});

describe('extractTopLevelSymbols — other files and props', () => {
  it('returns nothing outside the four families', () => {
    expect(extractTopLevelSymbols('README.md', '# export function x() {}')).toEqual([]);
  });

  it('extracts members of …Props types', () => {
    const text = ['export interface ButtonProps extends Base {', '  label: string;', '  onClick?: () => void;', '  handleHover(e: Event): void;', '  style: { color: string };', '}'].join('\n');
    expect(extractMembers('Button.tsx', text).map((member) => `${member.owner}.${member.name}:${member.line}`)).toEqual([
      'ButtonProps.label:2',
      'ButtonProps.onClick:3',
      'ButtonProps.handleHover:4',
      'ButtonProps.style:5',
    ]);
  });
});

describe('packageOf', () => {
  it('is the directory, dotted for Python', () => {
    expect(packageOf('pkg/config/a.go')).toBe('pkg/config');
    expect(packageOf('main.go')).toBe('');
    expect(packageOf('src/lib/a.ts')).toBe('src/lib');
    expect(packageOf('app/models/user.py')).toBe('app.models');
    expect(packageOf('setup.py')).toBe('');
  });
});

describe('line endings', () => {
  it('reads CRLF files like LF files', () => {
    expect(summary('a.go', 'package a\r\n\r\ntype Config struct {\r\n\tName string\r\n}\r\nfunc New() {}\r\n')).toEqual(['3:struct:Config*', '6:function:New*']);
    expect(summary('a.py', 'def create_app():\r\n    return 1\r\nX = 1\r\n')).toEqual(['1:function:create_app*', '3:const:X*']);
    expect(summary('a.ts', 'export const a = () => 1;\r\nexport interface B {}\r\n')).toEqual(['1:function:a*', '2:interface:B*']);
  });
});
