      * One order line of the nightly order batch: 35 bytes, fixed
      * length, one record per line of the batch file.
       01  ORDER-LINE.
           05  ORDER-ID            PIC X(8).
           05  CUSTOMER-ID         PIC 9(6).
           05  ITEM-CODE           PIC X(10).
           05  QUANTITY            PIC 9(4).
           05  UNIT-PRICE          PIC 9(5)V99.
