"""The prelude: ``List``, ``Option`` and ``Tree`` with map, foldl, foldr and friends (every
function of TVM's ``prelude.rly``, at the same types, and a few more).

The definitions are written in Relay (``PRELUDE_TEXT``) and parsed once.
"""
from __future__ import annotations

from functools import lru_cache

from .ir import IRModule

__all__ = ["prelude", "PRELUDE_TEXT"]


@lru_cache(maxsize=None)
def prelude() -> IRModule:
    """The prelude module (immutable, so one shared copy is safe)."""
    from .parser import parse
    return parse(PRELUDE_TEXT, source="<prelude>")


PRELUDE_TEXT = """#[version = "0.0.5"]
// The Relay prelude: List, Option and Tree with their usual functions.

type List[A] {
  Cons(A, List[A]),
  Nil,
}

type Option[A] {
  Some(A),
  None,
}

type Tree[A] {
  Rose(A, List[Tree[A]]),
}

def @id[A](%x: A) -> A {
  %x
}

def @compose[A, B, C](%f: fn (B) -> C, %g: fn (A) -> B) -> fn (A) -> C {
  fn (%x: A) -> C {
    %f(%g(%x))
  }
}

def @flip[A, B, C](%f: fn (A, B) -> C) -> fn (B, A) -> C {
  fn (%b: B, %a: A) -> C {
    %f(%a, %b)
  }
}

def @hd[A](%xs: List[A]) -> A {
  match? (%xs) {
    Cons(%x, _) => %x,
  }
}

def @tl[A](%xs: List[A]) -> List[A] {
  match? (%xs) {
    Cons(_, %rest) => %rest,
  }
}

def @nth[A](%xs: List[A], %n: int32) -> A {
  if (%n == 0) {
    @hd(%xs)
  } else {
    @nth(@tl(%xs), %n - 1)
  }
}

def @length[A](%xs: List[A]) -> int32 {
  match (%xs) {
    Cons(_, %rest) => 1 + @length(%rest),
    Nil => 0,
  }
}

def @map[A, B](%f: fn (A) -> B, %xs: List[A]) -> List[B] {
  match (%xs) {
    Cons(%x, %rest) => Cons(%f(%x), @map(%f, %rest)),
    Nil => Nil,
  }
}

def @foldl[A, B](%f: fn (A, B) -> A, %acc: A, %xs: List[B]) -> A {
  match (%xs) {
    Cons(%x, %rest) => @foldl(%f, %f(%acc, %x), %rest),
    Nil => %acc,
  }
}

def @foldr[A, B](%f: fn (A, B) -> B, %acc: B, %xs: List[A]) -> B {
  match (%xs) {
    Cons(%x, %rest) => %f(%x, @foldr(%f, %acc, %rest)),
    Nil => %acc,
  }
}

def @foldr1[A](%f: fn (A, A) -> A, %xs: List[A]) -> A {
  match? (%xs) {
    Cons(%x, Nil) => %x,
    Cons(%x, %rest) => %f(%x, @foldr1(%f, %rest)),
  }
}

def @concat[A](%xs: List[A], %ys: List[A]) -> List[A] {
  @foldr(Cons, %ys, %xs)
}

def @filter[A](%f: fn (A) -> bool, %xs: List[A]) -> List[A] {
  match (%xs) {
    Cons(%x, %rest) => if (%f(%x)) {
      Cons(%x, @filter(%f, %rest))
    } else {
      @filter(%f, %rest)
    },
    Nil => Nil,
  }
}

def @zip[A, B](%xs: List[A], %ys: List[B]) -> List[(A, B)] {
  match ((%xs, %ys)) {
    (Cons(%x, %xr), Cons(%y, %yr)) => Cons((%x, %y), @zip(%xr, %yr)),
    _ => Nil,
  }
}

def @rev[A](%xs: List[A]) -> List[A] {
  @foldl(@flip(Cons), Nil, %xs)
}

def @iterate[A](%f: fn (A) -> A, %n: int32) -> fn (A) -> A {
  if (%n == 0) {
    @id
  } else {
    @compose(%f, @iterate(%f, %n - 1))
  }
}

def @unfoldr[A, B](%f: fn (A) -> Option[(A, B)], %seed: A) -> List[B] {
  match (%f(%seed)) {
    Some(%pair) => Cons(%pair.1, @unfoldr(%f, %pair.0)),
    None => Nil,
  }
}

def @unfoldl[A, B](%f: fn (A) -> Option[(A, B)], %seed: A) -> List[B] {
  @rev(@unfoldr(%f, %seed))
}

def @update[A](%xs: List[A], %n: int32, %v: A) -> List[A] {
  match? (%xs) {
    Cons(%x, %rest) => if (%n == 0) { Cons(%v, %rest) } else { Cons(%x, @update(%rest, %n - 1, %v)) },
  }
}

def @sum(%xs: List[int32]) -> int32 {
  @foldl(fn (%a: int32, %b: int32) -> int32 { %a + %b }, 0, %xs)
}

// A fold that also maps: %f takes the accumulator and an element and gives the next
// accumulator and an output.  Left to right, each output is put in front of the previous ones,
// so they come out reversed (as in TVM's prelude).
def @map_accuml[A, B, C](%f: fn (A, B) -> (A, C), %init: A, %xs: List[B]) -> (A, List[C]) {
  @foldl(fn (%state: (A, List[C]), %x: B) -> (A, List[C]) {
    let (%acc, %y) = %f(%state.0, %x);
    (%acc, Cons(%y, %state.1))
  }, (%init, Nil), %xs)
}

// The same from the right: the last element is visited first; outputs keep the input order.
def @map_accumr[A, B, C](%f: fn (A, B) -> (A, C), %init: A, %xs: List[B]) -> (A, List[C]) {
  match (%xs) {
    Nil => (%init, Nil),
    Cons(%x, %rest) => {
      let (%acc, %ys) = @map_accumr(%f, %init, %rest);
      let (%last, %y) = %f(%acc, %x);
      (%last, Cons(%y, %ys))
    },
  }
}

def @get_or_else[A](%opt: Option[A], %default: A) -> A {
  match (%opt) {
    Some(%x) => %x,
    None => %default,
  }
}

def @option_map[A, B](%f: fn (A) -> B, %opt: Option[A]) -> Option[B] {
  match (%opt) {
    Some(%x) => Some(%f(%x)),
    None => None,
  }
}

def @is_some[A](%opt: Option[A]) -> bool {
  match (%opt) {
    Some(_) => True,
    None => False,
  }
}

def @tmap[A, B](%f: fn (A) -> B, %t: Tree[A]) -> Tree[B] {
  match (%t) {
    Rose(%v, %children) => Rose(%f(%v), @map(fn (%c: Tree[A]) -> Tree[B] { @tmap(%f, %c) }, %children)),
  }
}

def @size[A](%t: Tree[A]) -> int32 {
  match (%t) {
    Rose(_, %children) => 1 + @foldl(fn (%acc: int32, %c: Tree[A]) -> int32 { %acc + @size(%c) }, 0, %children),
  }
}
"""
