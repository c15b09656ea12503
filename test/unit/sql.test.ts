import { describe, expect, it } from 'vitest';
import { compile, join, param, raw, sql, statement } from '../../src/db/sql.js';

describe('sql: parameters numbered when the statement is put together', () => {
  it('numbers values in order, and a fragment embedded in another after the outer ones before it', () => {
    const read = sql`select * from ip_stats where ip = ${'8.8.8.8'} and n > ${3}`;
    const { text, values } = compile(sql`with charged as (select ${'a:1'} as s, ${5} as u), answer as (${read}) select * from answer where ${true}`);
    expect(text).toBe('with charged as (select $1 as s, $2 as u), answer as (select * from ip_stats where ip = $3 and n > $4) select * from answer where $5');
    expect(values).toEqual(['a:1', 5, '8.8.8.8', 3, true]);
  });

  it('gives a param one number however often it appears, across fragments', () => {
    const ip = param('2001:db8::1');
    const inner = sql`s.ip = ${ip}`;
    const { text, values } = compile(sql`select ${ip}::text as ip from (select 1) one left join ip_stats s on ${inner} where ${7} > 0 and ${ip} <> ''`);
    expect(text).toBe("select $1::text as ip from (select 1) one left join ip_stats s on s.ip = $1 where $2 > 0 and $1 <> ''");
    expect(values).toEqual(['2001:db8::1', 7]);
  });

  it('never puts a value into the text: only raw does, and a "$1" inside a value stays a value', () => {
    const { text, values } = compile(sql`select ${raw('count(*)')} from t where a = ${"'; drop table t; --"} and b = ${'$1'}`);
    expect(text).toBe('select count(*) from t where a = $1 and b = $2');
    expect(values).toEqual(["'; drop table t; --", '$1']);
  });

  it('joins fragments and names a statement', () => {
    expect(statement('two', sql`select ${join([sql`${1}`, sql`${2}::int`])}`)).toEqual({ name: 'two', text: 'select $1, $2::int', values: [1, 2] });
    expect(compile(sql`select 1 ${join([])}`).text).toBe('select 1 ');
  });
});
