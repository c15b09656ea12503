import { ArrayType, BigIntType } from '@mikro-orm/core';

// A mapped type keeps a reference to the one property it serves, so each property gets its own.

/** `bigint` columns (ids, sums): numbers, as the repositories' SQL reads them; they stay far below 2^53. */
export const bigintNumber = () => new BigIntType('number');

/** `smallint[]` / `integer[]` columns: arrays of numbers. */
export const numberArray = () => new ArrayType<number>(Number);
