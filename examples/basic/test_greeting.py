import unittest

from greeting import greet


class GreetingTest(unittest.TestCase):
    def test_greets_by_name(self) -> None:
        self.assertEqual(greet("Ada"), "Hello, Ada!")

    def test_trims_whitespace(self) -> None:
        self.assertEqual(greet("  Ada "), "Hello, Ada!")

    def test_refuses_empty_name(self) -> None:
        with self.assertRaises(ValueError):
            greet("   ")


if __name__ == "__main__":
    unittest.main()
