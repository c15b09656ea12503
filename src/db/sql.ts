/**
 * SQL written as a tagged template, with its parameters numbered when the whole statement is
 * put together, not when each piece is written: a fragment (a read, a charge) can be embedded in
 * another statement without renumbering its `$n` by hand or by regex.
 *
 *   const ip = param('8.8.8.8');                 // one parameter, however often it is used
 *   const read = sql`select * from ip_stats where ip = ${ip} or ${ip} = ''`;
 *   statement('check', sql`with r as (${read}) select * from r where ${3} > 1`)
 *     → { name: 'check', text: 'with r as (select * from ip_stats where ip = $1 or $1 = \'\') select * from r where $2 > 1', values: ['8.8.8.8', 3] }
 *
 * An interpolated value is always a parameter, never text; only `raw` puts text in, and only for
 * the program's own constants (column lists, lock expressions).
 */

/** A named statement, prepared once per connection. */
export interface Statement {
  name: string;
  text: string;
  values: unknown[];
}
export class Sql {
  /** @internal */
  constructor(
    readonly strings: readonly string[],
    readonly values: readonly unknown[],
  ) {}
}

/** A parameter that takes one number in a statement, however many times it appears. */
export class Param {
  constructor(readonly value: unknown) {}
}

export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  return new Sql([...strings], values);
}

/** Text of the program's own, put in as it is (never a value from a request). */
export function raw(text: string): Sql {
  return new Sql([text], []);
}

export function param(value: unknown): Param {
  return new Param(value);
}

/** Joins fragments with `separator` (`, ` by default). */
export function join(parts: readonly Sql[], separator = ', '): Sql {
  if (parts.length === 0) return raw('');
  const strings = ['', ...Array.from({ length: parts.length - 1 }, () => separator), ''];
  return new Sql(strings, parts);
}

/** Numbers the parameters of `query` from $1, in the order they first appear. */
export function compile(query: Sql): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const numbers = new Map<Param, number>();
  const number = (value: unknown): string => {
    if (value instanceof Param) {
      let n = numbers.get(value);
      if (n === undefined) {
        values.push(value.value);
        n = values.length;
        numbers.set(value, n);
      }
      return `$${n}`;
    }
    values.push(value);
    return `$${values.length}`;
  };
  const walk = (q: Sql): string => {
    let text = q.strings[0]!;
    for (let i = 0; i < q.values.length; i++) {
      const value = q.values[i];
      text += (value instanceof Sql ? walk(value) : number(value)) + q.strings[i + 1]!;
    }
    return text;
  };
  const text = walk(query);
  return { text, values };
}

/**
 * A named statement (prepared once per connection). The name must stand for one text: a
 * statement whose shape varies takes a name per shape.
 */
export function statement(name: string, query: Sql): Statement {
  return { name, ...compile(query) };
}

/** Numbers as PostgreSQL's array text, `{1,2}`: one element of an `unnest` parameter of arrays (unnest takes one dimension). */
export const pgArray = (values: readonly number[]): string => `{${values.join(',')}}`;
